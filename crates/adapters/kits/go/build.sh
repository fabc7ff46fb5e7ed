#!/bin/sh
# Builds herd-go-arm in GOPATH mode against Debian's packaged go-retryablehttp, go-resiliency and (for
# go-grpc, when installed) grpc-go. Files are listed, so their build tags do not matter here:
#   apt-get install -y golang-go golang-github-hashicorp-go-retryablehttp-dev golang-gopkg-eapache-go-resiliency.v1-dev golang-google-grpc-dev
set -eu
cd "$(dirname "$0")"
GOPATH=/usr/share/gocode
pkg=$GOPATH/src/github.com/hashicorp/go-retryablehttp
[ -d "$pkg" ] || { echo "build.sh: $pkg missing (apt-get install golang-github-hashicorp-go-retryablehttp-dev)" >&2; exit 1; }
want=$(sed -n 's/^const libraryVersion = "\(.*\)"/\1/p' main.go)
have=$(dpkg-query -W -f '${Version}' golang-github-hashicorp-go-retryablehttp-dev 2>/dev/null || echo unknown)
case "$have" in "$want"*) ;; *) echo "build.sh: warning: packaged go-retryablehttp is $have, main.go says $want" >&2 ;; esac
res=$GOPATH/src/gopkg.in/eapache/go-resiliency.v1
[ -d "$res" ] || { echo "build.sh: $res missing (apt-get install golang-gopkg-eapache-go-resiliency.v1-dev)" >&2; exit 1; }
want=$(sed -n 's/^const resiliencyVersion = "\(.*\)"/\1/p' resiliency.go)
have=$(dpkg-query -W -f '${Version}' golang-gopkg-eapache-go-resiliency.v1-dev 2>/dev/null || echo unknown)
case "$have" in "$want"*) ;; *) echo "build.sh: warning: packaged go-resiliency is $have, resiliency.go says $want" >&2 ;; esac
# grpc-go only for go-grpc: without it the others build, and go-grpc says what to install.
if [ -d "$GOPATH/src/google.golang.org/grpc" ]; then grpc=grpc.go; else
  echo "build.sh: no grpc-go in $GOPATH (apt-get install golang-google-grpc-dev): building without go-grpc" >&2
  grpc=grpc_absent.go
fi
# shellcheck disable=SC2086
GO111MODULE=off GOPATH=$GOPATH GOCACHE=${GOCACHE:-/tmp/herd-go-cache} go build -o herd-go-arm main.go kit.go resiliency.go $grpc
