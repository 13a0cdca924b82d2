#!/usr/bin/env bash
# docker/make-cert.sh - makes a self-signed certificate file for trying HTTPS (compose.https.yaml, compose.cluster.https.yaml).
#
# Usage: docker/make-cert.sh [-o FILE] [NAME...]
#   -o FILE  where to write it (default docker/certs/race2048.pem, what the
#            compose files mount unless RACE2048_CERT says otherwise)
#   NAME     host names and IP addresses the certificate is for (default:
#            localhost, 127.0.0.1 and this machine's host name)
# Writes one PEM file: the certificate, then its private key (what HAProxy's
# `crt` reads). Browsers warn about a self-signed certificate (click through,
# or trust it); for a real one see docker/README.md, "HTTPS". Needs openssl.
set -Eeuo pipefail

OUT="$(dirname "$0")/certs/race2048.pem"
while [ $# -gt 0 ]; do
    case "$1" in
        -o) OUT=$2; shift 2 ;;
        -h | --help) sed -n '/^# Usage:/,/^# or trust it/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "make-cert: unknown option $1 (try --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || set -- localhost 127.0.0.1 "$(hostname)"

# subjectAltName is what browsers match, not the common name.
SAN=""
for name in "$@"; do
    if [[ $name =~ ^[0-9.]+$ || $name == *:* ]]; then SAN+="${SAN:+,}IP:$name"; else SAN+="${SAN:+,}DNS:$name"; fi
done

# The folder is the owner's alone (the key is inside); the file itself is
# readable, because the container's haproxy user reads it through the bind
# mount, which does not pass through this folder.
DIR=$(dirname "$OUT")
mkdir -p "$DIR"
[ "$DIR" != "$(dirname "$0")/certs" ] || chmod 0700 "$DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 825 \
    -subj "/CN=$1" -addext "subjectAltName=$SAN" \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" 2>"$TMP/log" || { cat "$TMP/log" >&2; exit 1; }
cat "$TMP/cert.pem" "$TMP/key.pem" >"$TMP/race2048.pem"
chmod 0644 "$TMP/race2048.pem"
mv "$TMP/race2048.pem" "$OUT"
echo "make-cert: wrote $OUT (self-signed, for $SAN, valid 825 days)"
