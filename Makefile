# The README's two commands: `make demo` runs myco against the scripted fake model, `make test`
# runs every check.
GO ?= go
PKGS := ./...

.PHONY: build test lint bench demo fmt clean

build:
	$(GO) build -o bin/myco ./cmd/myco

# test: vet, the gofmt check, the race-enabled suite and a short fuzz of the session loader.
test: lint
	$(GO) test -race -count=1 $(PKGS)
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 10s -fuzzminimizetime 100x ./sessions/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 10s -fuzzminimizetime 100x ./config/

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# bench: the performance targets, printed as ratios measured in one run.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./... | grep -v '^goos\|^goarch\|^pkg\|^cpu'

demo:
	./scripts/demo.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
