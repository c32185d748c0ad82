import { Counter, Gauge, type Registry } from 'prom-client';
import type { Database } from '../db/client.js';
import type { ReadReplicas } from '../db/read-routing.js';

/** The longest a scrape waits for the primary's view of its replicas. */
const REPLICATION_QUERY_TIMEOUT_MS = 1000;
/** One answer serves the scrape that asked for it. */
const STANDBYS_REUSE_MS = 100;

/**
 * Read replicas in /metrics (DATABASE_READ_URL): reads served by a replica or handed to the primary; the replay
 * lag the gateway last saw on the read side; and the primary's own view of each standby (pg_stat_replication),
 * in seconds and bytes of WAL not yet replayed.
 */
export function registerReadReplicaMetrics(registry: Registry, db: Pick<Database, 'raw'>, replicas: ReadReplicas): void {
  new Counter({
    name: 'db_replica_reads_total',
    help: 'Reads of read-only requests, by who served them: a replica, or the primary (the replica was behind the consistency token or the lag bound, or unreachable)',
    labelNames: ['served_by'] as const,
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ served_by: 'replica' }, replicas.stats.replica);
      this.inc({ served_by: 'primary' }, replicas.stats.primaryFallback);
    },
  });
  new Gauge({
    name: 'db_read_replica_lag_seconds',
    help: 'Replay lag of the replica this process read from last, as it reported it (0 when it has replayed all it received)',
    registers: [registry],
    collect() {
      this.set((replicas.latest?.lagMs ?? 0) / 1000);
    },
  });
  type StandbyRow = { standby: string; sync_state: string; seconds: number | null; bytes: string | null };
  // Asked once per scrape for both gauges, which prom-client collects concurrently.
  let asked: { at: number; rows: Promise<StandbyRow[]> } | undefined;
  const standbys = (): Promise<StandbyRow[]> => {
    if (!asked || Date.now() - asked.at > STANDBYS_REUSE_MS) {
      const rows = Promise.race([
        db.raw.query<StandbyRow>(
          `SELECT application_name AS standby, sync_state, extract(epoch FROM replay_lag)::float8 AS seconds,
             pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::text AS bytes
           FROM pg_stat_replication`,
        ),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), REPLICATION_QUERY_TIMEOUT_MS).unref()),
      ]).catch((): StandbyRow[] => []);
      asked = { at: Date.now(), rows };
    }
    return asked.rows;
  };
  const standbyGauge = (name: string, help: string, value: (row: StandbyRow) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['standby', 'sync_state'] as const,
      registers: [registry],
      async collect() {
        const rows = await standbys();
        this.reset();
        for (const row of rows) this.set({ standby: row.standby, sync_state: row.sync_state }, value(row));
      },
    });
  standbyGauge(
    'db_replication_lag_seconds',
    "The primary's view of each standby (pg_stat_replication): replay lag in seconds",
    (row) => row.seconds ?? 0,
  );
  standbyGauge(
    'db_replication_lag_bytes',
    "The primary's view of each standby (pg_stat_replication): WAL written but not yet replayed there, in bytes",
    (row) => Number(row.bytes ?? 0),
  );
}
