#!/bin/sh
# Builds herd-go-arm in GOPATH mode against Debian's packaged go-retryablehttp:
#   apt-get install -y golang-go golang-github-hashicorp-go-retryablehttp-dev
set -eu
cd "$(dirname "$0")"
GOPATH=/usr/share/gocode
pkg=$GOPATH/src/github.com/hashicorp/go-retryablehttp
[ -d "$pkg" ] || { echo "build.sh: $pkg missing (apt-get install golang-github-hashicorp-go-retryablehttp-dev)" >&2; exit 1; }
want=$(sed -n 's/^const libraryVersion = "\(.*\)"/\1/p' main.go)
have=$(dpkg-query -W -f '${Version}' golang-github-hashicorp-go-retryablehttp-dev 2>/dev/null || echo unknown)
case "$have" in "$want"*) ;; *) echo "build.sh: warning: packaged go-retryablehttp is $have, main.go says $want" >&2 ;; esac
GO111MODULE=off GOPATH=$GOPATH GOCACHE=${GOCACHE:-/tmp/herd-go-cache} go build -o herd-go-arm main.go kit.go
