#!/usr/bin/env bash
# make demo: myco with no API key. Starts the scripted fake model on 127.0.0.1 (it loops its
# script: every prompt gets a real bash tool call, then an answer that quotes it), writes a
# throwaway profile under a temporary MYCO_HOME and starts myco's server, which prints the
# URL to open. With -p PROMPT it runs one prompt instead. Ctrl-C ends both.
#
#   scripts/demo.sh                    the browser UI on 127.0.0.1:8080 (MYCO_ADDR to change it)
#   scripts/demo.sh -p "What machine is this?"
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x bin/myco ] || go build -o bin/myco ./cmd/myco
go build -o bin/fakemodel ./internal/fakemodel/cmd/fakemodel
home=$(mktemp -d)
fifo="$home/fake.in"
mkfifo "$fifo"
cleanup() { exec 3>&- 2>/dev/null || true; [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$home"; }
trap cleanup EXIT
./bin/fakemodel -loop -script scripts/demo-script.json <"$fifo" >"$home/fake.url" &
fake_pid=$!
exec 3>"$fifo" # the fake serves until this closes
for _ in $(seq 100); do [ -s "$home/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$home/fake.url")
mkdir -p "$home/profiles/default"
chmod 700 "$home" "$home/profiles" "$home/profiles/default"
cat >"$home/profiles/default/config.toml" <<TOML
[gateways.fake]
protocol = "anthropic-messages"
base_url = "$url"

[models.demo]
gateway = "fake"
context_window = 200_000
TOML
echo "# MYCO_HOME=$home (removed on exit); scripted fake model at $url" >&2
if [ "${1:-}" = "-p" ]; then
	MYCO_HOME="$home" ./bin/myco -p "${2:-What machine is this?}"
else
	echo "# open the URL below in a browser (from another machine: ssh -L 8080:127.0.0.1:8080 THIS-HOST); Ctrl-C stops" >&2
	MYCO_HOME="$home" ./bin/myco --addr "${MYCO_ADDR:-127.0.0.1:8080}"
fi
