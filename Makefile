# Conveniences over the scripts; nothing in README needs make.
.PHONY: build demo test bench bench-compare fmt vet

build:
	./scripts/build.sh

demo:
	./scripts/demo.sh

test:
	./scripts/test.sh

# The engine against the bare franz-go loop on the embedded broker (1 M
# records; ratios printed per guarantee and topology), the cost of the
# REST API (ratio with and without it, same run), the catch-up from a
# 1 M-record backlog of every topology kind in memory and on RocksDB
# (BenchmarkCatchUp: rates, rocks-ratio, longest gap between commits,
# peak RSS), a topology file against the same topology in Go (on the
# broker, then through the test driver), issue 40's two instances
# against one (BenchmarkScaling: each pinned to a core, stateless, count
# and the word count through a repartition topic; speedup and CPU per
# record) and the stall a joining instance causes on one that keeps its
# tasks (BenchmarkRebalanceStall, in memory and on RocksDB), then the
# rest.
bench:
	go test -run '^$$' -bench EngineVsBaseline -benchtime 1x ./engine/
	go test -run '^$$' -bench EngineHTTP -benchtime 1x ./engine/
	STOATFLOW_BENCH_REPEAT=3 go test -run '^$$' -bench CatchUp -benchtime 1x -timeout 3h ./engine/
	go test -run '^$$' -bench FileVsGo -benchtime 1x ./engine/
	go test -run '^$$' -bench Scaling -benchtime 1x -timeout 1h ./engine/
	go test -run '^$$' -bench RebalanceStall -benchtime 1x -count 3 -timeout 30m ./engine/
	go test -run '^$$' -bench FileVsGo -benchtime 3x ./engine/topofile/
	go test -run '^$$' -bench . -benchmem -benchtime 2x ./testdriver/ ./replay/
	go test -run '^$$' -bench '^BenchmarkLane$$' -benchtime 3x ./engine/lanes/

# stoatctl against the bare franz-go exactly-once loop and Kafka Streams
# 4.4, on the embedded broker and on a real Kafka broker: throughput,
# latency, memory (docs/performance.md). Never part of scripts/test.sh;
# takes an hour or more at the full sizes. BENCH_COMPARE_FLAGS shrinks it,
# e.g. make bench-compare BENCH_COMPARE_FLAGS='-records 50000 -rounds 2'.
bench-compare:
	go run ./scripts/benchcompare -out bench-compare-out $(BENCH_COMPARE_FLAGS)

fmt:
	gofmt -w .

vet:
	go vet ./...
