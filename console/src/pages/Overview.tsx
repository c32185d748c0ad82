import { useQuery, useSubscription } from 'urql';
import { Link } from 'wouter';
import { graphql } from '../generated';
import { countTicks } from '../format';
import { ErrorMessage, formatDuration, Loading, Time, PageHeader, useThrottled, DAY_MS } from '../ui';
import { SyncChanges } from './Connections';
import { RunConnection, SYNC_STATUSES } from './SyncHistory';

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
        deletedConnectionName
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
                          <RunConnection
                            sync={{
                              connectionId: d.connectionId,
                              connectionName: d.deletedConnectionName,
                              connection: d.connectionName ? { id: d.connectionId, name: d.connectionName } : null,
                            }}
                          />
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

/** A day (YYYY-MM-DD, a UTC day) as the axis and the summary write it: "Nov 3". */
const dayLabel = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', timeZone: 'UTC' });
function formatDay(day: string): string {
  return dayLabel.format(new Date(`${day}T00:00:00Z`));
}

/** Days between two date labels of the x axis (twice as many on a narrow screen, which hides the `minor` ones). */
const DAY_LABEL_EVERY = 5;

/**
 * Stacked bars, one per UTC day, with a count axis (round numbers and grid lines) and a date axis, readable
 * without hovering; the labels are HTML, so they keep their size however wide the chart is drawn. The summary
 * is its text alternative, and the same numbers are a table below it.
 */
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
  const max = Math.max(0, ...totals);
  const ticks = countTicks(max);
  const top = ticks[ticks.length - 1]!;
  const all = totals.reduce((a, b) => a + b, 0);
  const busiest = dayList[totals.indexOf(max)]!;
  // Plot units: each day 10 wide, the height 100; stretched to the box, so the bars fill its width.
  const summary =
    `${all} runs from ${formatDay(dayList[0]!)} to ${formatDay(dayList[days - 1]!)} (UTC days)` +
    (all > 0 ? `, at most ${max} on ${formatDay(busiest)}.` : '.');
  return (
    <figure className="chart">
      <div className="chart-area">
        <div className="chart-y" aria-hidden="true">
          {ticks.map((tick) => (
            <span key={tick} style={{ bottom: `${(tick / top) * 100}%` }}>
              {tick}
            </span>
          ))}
        </div>
        <svg viewBox={`0 0 ${days * 10} 100`} preserveAspectRatio="none" role="img" aria-label={summary}>
          {ticks.map((tick) => (
            <line key={tick} className="grid" x1={0} x2={days * 10} y1={100 - (tick / top) * 100} y2={100 - (tick / top) * 100} />
          ))}
          {dayList.map((day, i) => {
            let y = 100;
            return (
              <g key={day}>
                {SYNC_STATUSES.map((status) => {
                  const value = counts.get(day)![status];
                  if (value === 0) return null;
                  const h = (value / top) * 100;
                  y -= h;
                  return (
                    <rect key={status} className={`bar-${status}`} x={i * 10 + 1} y={y} width={8} height={h}>
                      <title>{`${day}: ${value} ${status.replace('_', ' ')}`}</title>
                    </rect>
                  );
                })}
              </g>
            );
          })}
        </svg>
        <div className="chart-x" aria-hidden="true">
          {dayList.map((day, i) =>
            i % DAY_LABEL_EVERY === 0 ? (
              <span
                key={day}
                className={i % (2 * DAY_LABEL_EVERY) === 0 ? undefined : 'minor'}
                style={{ left: `${((i + 0.5) / days) * 100}%` }}
              >
                {formatDay(day)}
              </span>
            ) : null,
          )}
        </div>
      </div>
      <p className="note chart-summary">{summary}</p>
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
