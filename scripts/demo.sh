#!/usr/bin/env bash
# make demo: myco with no API key. Starts the scripted fake model on 127.0.0.1 (it loops its
# script: every prompt gets a real bash tool call, then an answer that quotes it), points the
# demo's own MYCO_HOME (.demo/ in this checkout, kept between runs, so its sessions stay
# readable and resumable) at it and starts myco's server, which prints the URL to open. With
# -p PROMPT it runs one prompt instead. Ctrl-C ends both.
#
#   scripts/demo.sh                    the browser UI on 127.0.0.1:8080 (MYCO_ADDR=127.0.0.1:PORT
#                                      for another port, 127.0.0.1:0 for any free one)
#   scripts/demo.sh -p "What machine is this?"
set -euo pipefail
cd "$(dirname "$0")/.."
myco="${MYCO_BIN:-bin/myco}" # the tests run their own build
if [ ! -x "$myco" ]; then
	echo "# building $myco (go build)" >&2
	go build -o "$myco" ./cmd/myco
fi
home="${MYCO_DEMO_HOME:-$PWD/.demo}"
run=$(mktemp -d)
# cleanup ends the fake (closing its stdin ends it; the kill covers a fake that hangs) and
# keeps the exit status of myco, whatever the fake's end races to.
cleanup() {
	local status=$?
	exec 3>&- || true
	if [ -n "${fake_pid:-}" ]; then
		kill "$fake_pid" 2>/dev/null || true
		wait "$fake_pid" 2>/dev/null || true
	fi
	rm -rf "$run"
	exit "$status"
}
trap cleanup EXIT
echo "# building the scripted fake model" >&2
go build -o "$run/fakemodel" ./internal/fakemodel/cmd/fakemodel
fifo="$run/fake.in"
mkfifo "$fifo"
"$run/fakemodel" -loop -script scripts/demo-script.json <"$fifo" >"$run/fake.url" &
fake_pid=$!
exec 3>"$fifo" # the fake serves until this closes
for _ in $(seq 100); do [ -s "$run/fake.url" ] && break; sleep 0.05; done
url=$(head -n1 "$run/fake.url")
mkdir -p "$home/profiles/default"
chmod 700 "$home" "$home/profiles" "$home/profiles/default"
# the fake's port changes every run: the config is written anew, the sessions stay
cat >"$home/profiles/default/config.toml" <<TOML
[gateways.fake]
protocol = "anthropic-messages"
base_url = "$url"

[models.demo]
gateway = "fake"
context_window = 200_000
TOML
echo "# MYCO_HOME=$home (kept between runs: rm -rf $home to start afresh); scripted fake model at $url" >&2
if [ "${1:-}" = "-p" ]; then
	echo "# the session stays in $home: make demo (or scripts/demo.sh) shows it in the browser" >&2
	MYCO_HOME="$home" "$myco" -p "${2:-What machine is this?}"
else
	# myco reads MYCO_ADDR itself, and names the port it bound in its port-forward hint.
	echo "# open the URL below in a browser (from another machine: forward the port as myco says); Ctrl-C stops" >&2
	MYCO_HOME="$home" "$myco"
fi
