# Conveniences over the scripts; nothing in README needs make.
.PHONY: build demo test bench fmt vet

build:
	./scripts/build.sh

demo:
	./scripts/demo.sh

test:
	./scripts/test.sh

# The engine against the bare franz-go loop on the embedded broker (1 M
# records; ratios printed per guarantee and topology), the cost of the
# REST API (ratio with and without it, same run), then the rest.
bench:
	go test -run '^$$' -bench EngineVsBaseline -benchtime 1x ./engine/
	go test -run '^$$' -bench EngineHTTP -benchtime 1x ./engine/
	go test -run '^$$' -bench . -benchmem -benchtime 2x ./testdriver/ ./replay/

fmt:
	gofmt -w .

vet:
	go vet ./...
