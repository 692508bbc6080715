#!/usr/bin/env bash
# Installs the Debian packages the console and its tests use, when any is missing. Idempotent and
# quiet when everything is present; needs root (or sudo) only when something must be installed.
set -euo pipefail
pkgs=(postgresql flite sox pocketsphinx pocketsphinx-en-us libpocketsphinx-dev libsphinxbase-dev pkg-config libopus-dev chromium gcc iproute2)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "deps: Go is not on PATH (expected /usr/local/go/bin/go)" >&2; exit 1; }
# Let's Encrypt's test ACME server for the --acme-domain test (a test-only tool, built from the Go
# module proxy; never linked into the console).
gobin="$(go env GOBIN)"; [ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
if [ ! -x "$gobin/pebble" ] && ! command -v pebble >/dev/null; then
  echo "deps: installing pebble (test ACME server)" >&2
  GOFLAGS= go install github.com/letsencrypt/pebble/v2/cmd/pebble@v2.10.3
fi
