#!/usr/bin/env bash
# make demo: the whole loop with no API key. Builds myco and the scripted fake model, starts
# the fake on 127.0.0.1, writes a throwaway profile under a temporary MYCO_HOME and runs one
# prompt whose answer comes from a bash tool call.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/myco ./cmd/myco
go build -o bin/fakemodel ./internal/fakemodel/cmd/fakemodel
home=$(mktemp -d)
fifo="$home/fake.in"
mkfifo "$fifo"
cleanup() { exec 3>&- 2>/dev/null || true; [ -n "${fake_pid:-}" ] && kill "$fake_pid" 2>/dev/null; rm -rf "$home"; }
trap cleanup EXIT
./bin/fakemodel -script scripts/demo-script.json <"$fifo" >"$home/fake.url" &
fake_pid=$!
exec 3>"$fifo" # the fake serves until this closes
for _ in $(seq 100); do [ -s "$home/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$home/fake.url")
mkdir -p "$home/profiles/default"
cat >"$home/profiles/default/config.toml" <<TOML
[gateways.fake]
protocol = "anthropic-messages"
base_url = "$url"

[models.demo]
gateway = "fake"
context_window = 200_000
TOML
echo "# MYCO_HOME=$home (removed on exit); fake model at $url" >&2
MYCO_HOME="$home" ./bin/myco -p "What machine is this?"
