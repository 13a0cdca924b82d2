#!/bin/sh
# with_hosts.sh HOSTS_FILE COMMAND... - runs COMMAND with HOSTS_FILE as /etc/hosts, in a private
# mount namespace (unshare -rm), so a test can make a name resolve to chosen addresses.
hosts=$1
shift
exec unshare -rm sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$hosts" "$@"
