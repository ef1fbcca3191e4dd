# Conveniences over the scripts; nothing in README needs make.
.PHONY: build demo test bench fmt vet

build:
	./scripts/build.sh

demo:
	./scripts/demo.sh

test:
	./scripts/test.sh

bench:
	go test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w .

vet:
	go vet ./...
