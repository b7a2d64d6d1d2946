#!/usr/bin/env bash
# Make sure the local PostgreSQL (127.0.0.1:5432) and MariaDB (127.0.0.1:3306) used by the
# database tests are running; start them with the machine's own commands if they are not.
# It never fails by itself: a database test that cannot connect fails under CI=true.
set -u
if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  echo "services: starting PostgreSQL" >&2
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
fi
if command -v mariadb-admin >/dev/null && ! mariadb-admin -h 127.0.0.1 -uroot ping >/dev/null 2>&1; then
  echo "services: starting MariaDB" >&2
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
  for _ in $(seq 1 30); do mariadb-admin -h 127.0.0.1 -uroot ping >/dev/null 2>&1 && break; sleep 1; done
fi
exit 0
