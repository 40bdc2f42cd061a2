#!/bin/sh
# Brings both databases' schemas up to date with the schema tool (the schemas are embedded in it;
# re-running on an up-to-date database changes nothing), then runs the server in the foreground.
# The databases themselves are made by the postgres service (deploy/postgres/temporal-databases.sql).
# deploy/cluster/stack.ts does the same steps (scripts/temporal-server.ts, schemaSteps).
set -eu
# Binding 0.0.0.0, the services must tell each other an address they can reach: the container's own.
export TEMPORAL_BROADCAST_ADDRESS="${TEMPORAL_BROADCAST_ADDRESS:-$(hostname -i | cut -d" " -f1)}"
for pair in temporal:temporal temporal_visibility:visibility; do
  db=${pair%%:*} schema=${pair#*:}
  set -- --plugin postgres12 --ep "$POSTGRES_SEEDS" -p "$DB_PORT" -u "$POSTGRES_USER" --pw "$POSTGRES_PWD" --db "$db"
  temporal-sql-tool "$@" setup-schema -v 0.0
  temporal-sql-tool "$@" update-schema --schema-name "postgresql/v12/$schema"
done
exec temporal-server --root /etc/temporal --config config --env docker --allow-no-auth start
