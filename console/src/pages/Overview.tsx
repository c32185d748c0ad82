import { useQuery, useSubscription } from 'urql';
import { Link } from 'wouter';
import { graphql } from '../generated';
import { ErrorMessage, formatDuration, Loading, Time, PageHeader, useThrottled, DAY_MS } from '../ui';
import { SyncChanges } from './Connections';
import { SYNC_STATUSES } from './SyncHistory';

const OverviewQuery = graphql(`
  query ConsoleOverview {
    syncStats(days: 30) {
      days
      since
      perDay {
        day
        status
        count
      }
      durations {
        connectionId
        connectionName
        runs
        p50Ms
        p95Ms
      }
    }
    failing: connections(filter: { status: { eq: error } }, limit: 20) {
      totalCount
      nodes {
        id
        name
        applicationName
        syncs(limit: 1) {
          id
          startedAt
          errorMessage
        }
      }
    }
  }
`);

type Status = (typeof SYNC_STATUSES)[number];

export function Overview() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: OverviewQuery });
  const refresh = useThrottled(() => refetch({ requestPolicy: 'network-only' }), 5000);
  useSubscription({ query: SyncChanges }, () => refresh());
  return (
    <>
      <PageHeader title="Overview" />
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <>
          <section aria-labelledby="runs-per-day">
            <h2 id="runs-per-day">Runs per UTC day, last {data.syncStats.days} days</h2>
            <RunsChart since={data.syncStats.since} days={data.syncStats.days} perDay={data.syncStats.perDay} />
          </section>
          <section aria-labelledby="failing">
            <h2 id="failing">Connections whose last run failed</h2>
            {data.failing.nodes.length === 0 ? (
              <p>None: every connection's last run succeeded or is under way.</p>
            ) : (
              <div className="table-scroll">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Connection</th>
                      <th scope="col" className="secondary">
                        Application
                      </th>
                      <th scope="col">Last run</th>
                      <th scope="col">Error</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.failing.nodes.map((c) => (
                      <tr key={c.id}>
                        <td>
                          <Link href={`/connections/${c.id}`}>{c.name}</Link>
                        </td>
                        <td className="secondary">{c.applicationName}</td>
                        <td>
                          {c.syncs[0] ? (
                            <Link href={`/syncs/${c.syncs[0].id}`}>
                              <Time iso={c.syncs[0].startedAt} />
                            </Link>
                          ) : (
                            '—'
                          )}
                        </td>
                        <td>{c.syncs[0]?.errorMessage ?? '—'}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
            {data.failing.totalCount > data.failing.nodes.length ? (
              <p>
                <Link href="/connections">All {data.failing.totalCount} connections in error</Link>
              </p>
            ) : null}
          </section>
          <section aria-labelledby="durations">
            <h2 id="durations">Duration per connection, last {data.syncStats.days} days</h2>
            {data.syncStats.durations.length === 0 ? (
              <p>No finished runs in this period.</p>
            ) : (
              <div className="table-scroll">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Connection</th>
                      <th scope="col" className="number secondary">
                        Finished runs
                      </th>
                      <th scope="col" className="number">
                        p50
                      </th>
                      <th scope="col" className="number">
                        p95
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.syncStats.durations.map((d) => (
                      <tr key={d.connectionId}>
                        <td>
                          {d.connectionName ? (
                            <Link href={`/connections/${d.connectionId}`}>{d.connectionName}</Link>
                          ) : (
                            `deleted (${d.connectionId})`
                          )}
                        </td>
                        <td className="number secondary">{d.runs}</td>
                        <td className="number">{formatDuration(d.p50Ms)}</td>
                        <td className="number">{formatDuration(d.p95Ms)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        </>
      ) : null}
    </>
  );
}

/** Stacked bars, one per UTC day; the same numbers as a table below it for screen readers and exact reading. */
function RunsChart({
  since,
  days,
  perDay,
}: {
  since: string;
  days: number;
  perDay: readonly { day: string; status: Status; count: number }[];
}) {
  const start = new Date(since).getTime();
  const dayList = Array.from({ length: days }, (_, i) => new Date(start + i * DAY_MS).toISOString().slice(0, 10));
  const counts = new Map<string, Record<Status, number>>(dayList.map((d) => [d, { pending: 0, in_progress: 0, success: 0, failed: 0 }]));
  for (const row of perDay) {
    const entry = counts.get(row.day);
    if (entry) entry[row.status] += row.count;
  }
  const totals = dayList.map((d) => SYNC_STATUSES.reduce((sum, s) => sum + counts.get(d)![s], 0));
  const max = Math.max(1, ...totals);
  const width = 720;
  const height = 200;
  const barWidth = width / days;
  const all = totals.reduce((a, b) => a + b, 0);
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${width} ${height + 20}`} role="img" aria-label={`${all} runs in ${days} days, at most ${max} in one day`}>
        {dayList.map((day, i) => {
          let y = height;
          return (
            <g key={day}>
              {SYNC_STATUSES.map((status) => {
                const value = counts.get(day)![status];
                if (value === 0) return null;
                const h = (value / max) * height;
                y -= h;
                return (
                  <rect key={status} className={`bar-${status}`} x={i * barWidth + 1} y={y} width={barWidth - 2} height={h}>
                    <title>{`${day}: ${value} ${status.replace('_', ' ')}`}</title>
                  </rect>
                );
              })}
              {i % 5 === 0 ? (
                <text x={i * barWidth} y={height + 15} className="axis">
                  {day.slice(5)}
                </text>
              ) : null}
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul className="legend">
          {SYNC_STATUSES.map((s) => (
            <li key={s}>
              <span className={`swatch bar-${s}`} aria-hidden="true" /> {s.replace('_', ' ')}
            </li>
          ))}
        </ul>
        <details>
          <summary>Runs per day as a table</summary>
          <div className="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  {SYNC_STATUSES.map((s) => (
                    <th key={s} scope="col" className="number">
                      {s.replace('_', ' ')}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {dayList.map((day) => (
                  <tr key={day}>
                    <th scope="row">{day}</th>
                    {SYNC_STATUSES.map((s) => (
                      <td key={s} className="number">
                        {counts.get(day)![s]}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      </figcaption>
    </figure>
  );
}
