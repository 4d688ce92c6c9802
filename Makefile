# The README's two commands: `make demo` starts myco's server against the scripted fake model
# and prints the URL to open; `make test` runs every check.
GO ?= go
PKGS := ./...
# VERSION is the release version the binaries say: the git tag that names this commit, as
# git describe gives it (0.2.0, or 0.2.0-3-gabc1234 three commits after it, -dirty for a
# changed tree), else what the go command stamps (see internal/build).
VERSION ?= $(shell git describe --tags --dirty 2>/dev/null | sed 's/^v//')
LDFLAGS := -X main.version=$(VERSION)
# Static builds (CGO_ENABLED=0): myco needs no C library, and a static binary starts on any
# Linux of its architecture, which myco hosts install relies on. (The race detector of
# make test needs cgo: only the builds are static.)
STATIC := CGO_ENABLED=0
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
VENDOR := static/htmx
LEXERS := views/lexers/embedded

.PHONY: build test lint bench demo install release fmt clean assets generate check-generate check-assets screenshots doc

build: assets generate
	$(STATIC) $(GO) build -ldflags "$(LDFLAGS)" -o bin/myco ./cmd/myco
	$(STATIC) $(GO) build -o bin/myco-fence ./cmd/myco-fence

# release: static binaries for every platform of PLATFORMS in dist/, named
# myco-GOOS-GOARCH (the names myco hosts install looks for beside the running binary), and
# their SHA-256 sums. It builds from the committed assets and generated code, which
# check-generate proves current; tag the commit first (git tag v0.2.0) for the version.
release: check-generate
	rm -rf dist && mkdir -p dist
	for p in $(PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
		$(STATIC) GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o dist/myco-$$os-$$arch ./cmd/myco || exit 1; done
	cd dist && sha256sum myco-* > SHA256SUMS
	@echo "dist/: myco $(VERSION) for $(PLATFORMS)"; cat dist/SHA256SUMS

# assets: htmx 4 and its SSE extension, pinned in package.json and package-lock.json, from
# npm into static/htmx/, where the binary embeds them; and chroma's XML lexers, of the
# version go.mod names, into views/lexers/embedded/, which myco reads on first use instead
# of linking chroma's lexers package (see its doc). Both are committed, so that go build
# and go install make the same complete binary as make build; check-assets proves that
# they are byte for byte what npm ci and the pinned chroma give.
assets: $(VENDOR)/.stamp $(LEXERS)/.stamp
$(LEXERS)/.stamp: go.mod go.sum
	$(GO) mod download github.com/alecthomas/chroma/v2
	rm -f $(LEXERS)/*.xml $(LEXERS)/chroma.LICENSE
	dir=$$($(GO) list -m -f '{{.Dir}}' github.com/alecthomas/chroma/v2) && \
	cp "$$dir"/lexers/embedded/*.xml $(LEXERS)/ && cp "$$dir"/COPYING $(LEXERS)/chroma.LICENSE
	chmod -R u+w $(LEXERS)
	touch $@
$(VENDOR)/.stamp: package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund
	mkdir -p $(VENDOR)/ext
	cp node_modules/htmx.org/dist/htmx.min.js $(VENDOR)/
	cp node_modules/htmx.org/dist/ext/hx-sse.min.js $(VENDOR)/ext/
	cp node_modules/htmx.org/LICENSE $(VENDOR)/htmx.LICENSE
	touch $@

# generate: the templ components' Go code (committed, so go build works without templ).
generate:
	$(GO) tool templ generate -path views

# check-assets fails when the committed assets are not what npm ci and chroma's module give
# (make assets has just written them from there).
check-assets: assets
	@git diff --quiet -- $(VENDOR) $(LEXERS) && test -z "$$(git ls-files --others --exclude-standard -- $(VENDOR) $(LEXERS))" || \
	{ echo "the committed assets differ from what npm ci and chroma give:"; git status --short -- $(VENDOR) $(LEXERS); exit 1; }

# check-generate fails when a committed *_templ.go is not what its .templ generates.
check-generate:
	@tmp=$$(mktemp -d) && cp -r views $$tmp/ && $(GO) tool templ generate -path $$tmp/views >/dev/null 2>&1 && \
	for f in views/*_templ.go; do cmp -s $$f $$tmp/$$f || { echo "stale generated code: $$f (run make generate)"; rm -rf $$tmp; exit 1; }; done; rm -rf $$tmp

# test: vet, the gofmt check, the generated-code check, the race-enabled suite (browser
# tests included: they need the assets and Chromium) and short fuzz runs. The fuzz runs are
# bounded by a count of inputs, not by time: Go 1.26's coordinator can report "context
# deadline exceeded" as a failure when a -fuzztime duration ends (go.dev/issue/75804), and a
# count also does the same work on a fast machine and a loaded one (about 5 s each here).
test: lint check-generate check-assets
	$(GO) test -race -count=1 $(PKGS)
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 30000x -fuzzminimizetime 100x ./sessions/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 60000x -fuzzminimizetime 100x ./config/
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime 60000x -fuzzminimizetime 100x ./hosts/proto/
	$(GO) test -run '^$$' -fuzz '^FuzzRender$$' -fuzztime 60000x -fuzzminimizetime 100x ./internal/termmd/
	$(GO) test -run '^$$' -fuzz '^FuzzParseCommandLine$$' -fuzztime 60000x -fuzzminimizetime 100x ./policy/

lint:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null | grep -v '_templ.go$$' || find . -name '*.go' -not -name '*_templ.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# bench: the performance targets, printed as ratios measured in one run.
bench: assets
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./... | grep -v '^goos\|^goarch\|^pkg\|^cpu'

# screenshots: the browser tests save the main screens (light, dark, wide, narrow) here.
screenshots: assets
	rm -rf screenshots && mkdir -p screenshots
	MYCO_SCREENSHOTS=$$PWD/screenshots $(GO) test -count=1 -run '^TestBrowserScreenshots$$' ./internal/e2e/
	@ls screenshots

# doc: the generated reference of every package (pkgsite) on DOC_ADDR, to read the code
# that the code tour (docs/dev/tour.md) names. pkgsite runs with go run at a pinned
# version, so it is no dependency of the module (go.mod does not name it); its first run
# downloads and builds it, which takes a minute.
PKGSITE := golang.org/x/pkgsite/cmd/pkgsite@v0.6.0
DOC_ADDR ?= 127.0.0.1:6060
doc:
	@echo "# make doc: the reference at http://$(DOC_ADDR)/myco.dev once pkgsite says it listens (Ctrl-C stops it)"
	$(GO) run $(PKGSITE) -http $(DOC_ADDR) .

demo:
	@echo "# make demo: building bin/myco (htmx from npm, templ, go build; the first build takes a minute)"
	@$(MAKE) --no-print-directory build >/dev/null
	./scripts/demo.sh

# install: bin/myco into $(PREFIX)/bin (default ~/.local/bin). It needs Go only: the
# browser's assets and the generated code are committed (make build refreshes them first,
# which needs npm and templ).
PREFIX ?= $(HOME)/.local
install:
	$(STATIC) $(GO) build -ldflags "$(LDFLAGS)" -o bin/myco ./cmd/myco
	install -d $(PREFIX)/bin
	install -m 0755 bin/myco $(PREFIX)/bin/myco
	@echo "installed $(PREFIX)/bin/myco"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH; add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

fmt:
	gofmt -w $$(git ls-files '*.go' | grep -v '_templ.go$$')

clean:
	rm -rf bin dist node_modules $(VENDOR)/.stamp $(LEXERS)/.stamp
