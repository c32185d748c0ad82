import { useEffect, useState } from 'react';
import { useQuery } from 'urql';
import { Link, useLocation, useSearch } from 'wouter';
import { graphql } from '../generated';
import type { ActivityTargetType, ActorKind } from '../generated/graphql';
import { useSession } from '../session';
import {
  endOfLocalDay,
  ErrorMessage,
  Loading,
  PageHeader,
  Pager,
  SEARCH_DELAY_MS,
  startOfLocalDay,
  Time,
  TIME_ZONE,
  useCursorPages,
  useDebounced,
} from '../ui';

// The activity log: who changed members, service users, tokens, connections and webhook endpoints, when and from
// where. Admins only (the API refuses a reader). Its filters live in the URL, as the sync history's do.

const ActivityQuery = graphql(`
  query ConsoleActivity($filter: ActivityFilter, $search: String, $limit: Int!, $after: String) {
    activity(filter: $filter, search: $search, limit: $limit, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        action
        actorKind
        actorId
        actorName
        targetType
        targetId
        targetName
        address
        requestId
        createdAt
      }
    }
  }
`);

const PAGE = 25;

const TARGET_TYPES: readonly [ActivityTargetType, string][] = [
  ['member', 'Members'],
  ['service_user', 'Service users'],
  ['token', 'Tokens'],
  ['oauth_client', 'OAuth clients'],
  ['oauth_application', 'OAuth applications'],
  ['connection', 'Connections'],
  ['webhook_endpoint', 'Webhook endpoints'],
];

/** Each action as a person reads it. */
const ACTIONS: Record<string, string> = {
  'member.invited': 'invited a member',
  'member.invitation_resent': "resent a member's invitation",
  'member.password_reset_created': 'created a password reset link',
  'member.role_changed': "changed a member's role",
  'member.removed': 'removed a member',
  'service_user.created': 'created a service user',
  'service_user.role_changed': "changed a service user's role",
  'service_user.deleted': 'deleted a service user',
  'token.created': 'created a token',
  'token.revoked': 'revoked a token',
  'oauth_client.created': 'created an OAuth client',
  'oauth_client.deleted': 'deleted an OAuth client',
  'oauth_application.created': 'registered an OAuth application',
  'oauth_application.deleted': 'deleted an OAuth application',
  'oauth_application.approval_revoked': "revoked an application's approval",
  'connection.created': 'created a connection',
  'connection.updated': 'changed a connection',
  'connection.deleted': 'deleted a connection',
  'webhook_endpoint.created': 'added a webhook endpoint',
  'webhook_endpoint.updated': 'changed a webhook endpoint',
  'webhook_endpoint.deleted': 'deleted a webhook endpoint',
  'webhook_endpoint.secret_rotated': "rotated a webhook endpoint's secret",
};

const ACTOR_KINDS: Record<ActorKind, string> = { member: 'member', token: 'token', jwt: 'JWT', cli: 'command line' };

/** The URL's query parameters that make up the view. */
const FILTER_PARAMS = ['type', 'action', 'who', 'from', 'to'] as const;

/** Where a target can still be opened: its page, unless the entry removed it. */
function targetHref(type: ActivityTargetType, id: string, action: string): string | null {
  if (/\.(deleted|removed)$/.test(action)) return null;
  if (type === 'connection') return `/connections/${id}`;
  if (type === 'webhook_endpoint') return `/webhooks/${id}`;
  if (type === 'service_user') return `/users/service-users/${id}`;
  if (type === 'member') return '/users/members';
  return null;
}

/** The view kept in the URL (`/activity?type=token&from=2026-11-28`): a reload keeps it, a copied link opens it. */
function useActivityView() {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const refine = (changes: Record<string, string | null>, how = { push: false }) => {
    const next = new URLSearchParams(search);
    for (const [name, value] of Object.entries(changes)) {
      if (value) next.set(name, value);
      else next.delete(name);
    }
    const query = next.toString();
    if (query !== params.toString()) navigate(query ? `${location}?${query}` : location, { replace: !how.push });
  };
  return { params, refine };
}

export function Activity() {
  const session = useSession();
  const { params, refine } = useActivityView();
  const type = (params.get('type') ?? '') as ActivityTargetType | '';
  const action = params.get('action') ?? '';
  const from = params.get('from') ?? '';
  const to = params.get('to') ?? '';
  const whoParam = params.get('who') ?? '';
  // The box shows what is typed at once; the URL follows once typing pauses.
  const [who, setWho] = useState(whoParam);
  const settled = useDebounced(who.trim(), SEARCH_DELAY_MS);
  const [shownParam, setShownParam] = useState(whoParam);
  if (whoParam !== shownParam) {
    setShownParam(whoParam);
    setWho(whoParam);
  }
  // biome-ignore lint/correctness/useExhaustiveDependencies: refine and whoParam are read as they are then
  useEffect(() => {
    if (settled !== whoParam.trim()) refine({ who: settled || null });
  }, [settled]);

  const createdAt = {
    ...(from ? { gte: startOfLocalDay(from).toISOString() } : {}),
    ...(to ? { lt: endOfLocalDay(to).toISOString() } : {}),
  };
  const filter = {
    ...(type ? { targetType: { eq: type } } : {}),
    ...(action ? { action: { eq: action } } : {}),
    ...(whoParam.trim() ? { actorName: { ilike: `*${whoParam.trim()}*` } } : {}),
    ...(from || to ? { createdAt } : {}),
  };
  const scope = { filter: Object.keys(filter).length > 0 ? filter : null };
  const pages = useCursorPages(scope);
  const admin = session.role === 'admin';
  const [{ data, error, fetching }] = useQuery({
    query: ActivityQuery,
    variables: { ...scope, limit: PAGE, after: pages.after },
    pause: !admin,
  });
  const actions = Object.keys(ACTIONS).filter((name) => !type || name.startsWith(`${type}.`));
  const filtered = FILTER_PARAMS.some((name) => params.has(name));

  if (!admin) {
    return (
      <>
        <PageHeader title="Activity" />
        <p>Only admins can read the activity log.</p>
      </>
    );
  }
  return (
    <>
      <PageHeader title="Activity" />
      <p className="note">
        Who changed members, service users, tokens, connections and webhook endpoints, newest first. Times are in your time zone (
        {TIME_ZONE}); hover a time for UTC.
      </p>
      <form className="filters" aria-label="Filter the activity" onSubmit={(e) => e.preventDefault()}>
        <div>
          <label htmlFor="activity-type">What</label>
          <select id="activity-type" value={type} onChange={(e) => refine({ type: e.target.value || null, action: null }, { push: true })}>
            <option value="">Everything</option>
            {TARGET_TYPES.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="activity-action">Action</label>
          <select id="activity-action" value={action} onChange={(e) => refine({ action: e.target.value || null }, { push: true })}>
            <option value="">Any action</option>
            {actions.map((name) => (
              <option key={name} value={name}>
                {ACTIONS[name]}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label htmlFor="activity-who">Who</label>
          <input id="activity-who" type="search" placeholder="email or name" value={who} onChange={(e) => setWho(e.target.value)} />
        </div>
        <div>
          <label htmlFor="activity-from">From</label>
          <input id="activity-from" type="date" value={from} onChange={(e) => refine({ from: e.target.value || null })} />
        </div>
        <div>
          <label htmlFor="activity-to">Until</label>
          <input id="activity-to" type="date" value={to} onChange={(e) => refine({ to: e.target.value || null })} />
        </div>
        {filtered ? (
          <div className="filters-clear">
            <button type="button" onClick={() => refine(Object.fromEntries(FILTER_PARAMS.map((name) => [name, null])), { push: true })}>
              Clear filters
            </button>
          </div>
        ) : null}
      </form>
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <>
          {data.activity.nodes.length === 0 ? (
            <p>No activity{filtered ? ' matches these filters' : ' yet'}.</p>
          ) : (
            <div className="table-scroll">
              <table>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">What</th>
                    <th scope="col">Target</th>
                    <th scope="col">Address</th>
                  </tr>
                </thead>
                <tbody>
                  {data.activity.nodes.map((entry) => {
                    const href = targetHref(entry.targetType, entry.targetId, entry.action);
                    const target = entry.targetName ?? entry.targetId;
                    return (
                      <tr key={entry.id}>
                        <td>
                          <Time iso={entry.createdAt} />
                        </td>
                        <td title={entry.actorId ?? undefined}>
                          {entry.actorName ?? ACTOR_KINDS[entry.actorKind]}
                          {entry.actorKind === 'member' ? null : <span className="note"> ({ACTOR_KINDS[entry.actorKind]})</span>}
                        </td>
                        <td>{ACTIONS[entry.action] ?? entry.action}</td>
                        <td title={entry.targetId}>{href ? <Link href={href}>{target}</Link> : target}</td>
                        <td title={entry.requestId ? `request ${entry.requestId}` : undefined}>{entry.address ?? '—'}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
          <Pager label="Activity pages" pages={pages} pageInfo={data.activity.pageInfo} limit={PAGE} total={data.activity.totalCount} />
        </>
      ) : null}
    </>
  );
}
