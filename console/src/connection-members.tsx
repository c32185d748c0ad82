import {
  CONNECTION_KINDS,
  SETTINGS_MEMBERS,
  SYNC_INTERVALS,
  connectionMemberProblems,
  defaultSettings,
  membersOf,
  mergePatch,
  type ConnectionKind,
} from '../../src/domain/connection-members';

// The metadata and settings fields of a connection form, built from the application's kind with the very
// table and checks the API applies (src/domain/connection-members.ts), so the form refuses what the API
// would refuse before it asks, and says why in the API's words.

type Members = Record<string, unknown>;

export function kindOf(connectionKind: string | null | undefined): ConnectionKind | null {
  return (CONNECTION_KINDS as readonly string[]).includes(connectionKind ?? '') ? (connectionKind as ConnectionKind) : null;
}

/** A member's field name on GraphQL (camelCase) for its name in the API's JSON (snake_case). */
function graphqlName(key: string): string {
  return key.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/** A connection's metadata and settings as GraphQL returns them, with the members' JSON names; unset ones left out. */
export function membersFromGraphQL(
  kind: ConnectionKind | null,
  metadata: object,
  settings: object,
): { metadata: Members; settings: Members } {
  const pick = (keys: readonly string[], from: object) =>
    Object.fromEntries(
      keys.map((key) => [key, (from as Members)[graphqlName(key)]]).filter(([, value]) => value !== null && value !== undefined),
    );
  const members = membersOf(kind);
  return { metadata: pick(members.metadata, metadata), settings: pick(members.settings, settings) };
}

function labelOf(key: string): string {
  const words = key.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** The fields of `metadata` and `settings`, filled with `current` (a connection being edited) or the defaults. */
export function MemberFields({ kind, current }: { kind: ConnectionKind | null; current?: { metadata: Members; settings: Members } }) {
  const members = membersOf(kind);
  const settings = current?.settings ?? (defaultSettings(kind) as unknown as Members);
  return (
    <>
      <fieldset>
        <legend>Metadata</legend>
        {members.metadata.map((key) => (
          <div key={key} className="field">
            <label htmlFor={`metadata.${key}`}>
              {labelOf(key)} <code>{key}</code>
            </label>
            <input id={`metadata.${key}`} name={`metadata.${key}`} defaultValue={String(current?.metadata[key] ?? '')} />
          </div>
        ))}
      </fieldset>
      <fieldset>
        <legend>Settings</legend>
        {members.settings.map((key) => {
          const id = `settings.${key}`;
          const label = (
            <label htmlFor={id}>
              {labelOf(key)} <code>{key}</code>
            </label>
          );
          if (key === 'sync_interval') {
            return (
              <div key={key} className="field">
                {label}
                <select id={id} name={id} defaultValue={String(settings[key] ?? '')}>
                  <option value="">no scheduled runs</option>
                  {SYNC_INTERVALS.map((interval) => (
                    <option key={interval} value={interval}>
                      {interval}
                    </option>
                  ))}
                </select>
              </div>
            );
          }
          if (typeof SETTINGS_MEMBERS[key].default === 'boolean') {
            return (
              <div key={key} className="field checkbox">
                <input id={id} name={id} type="checkbox" defaultChecked={Boolean(settings[key] ?? SETTINGS_MEMBERS[key].default)} />
                {label}
              </div>
            );
          }
          return (
            <div key={key} className="field">
              {label}
              <input id={id} name={id} type="number" step={1} defaultValue={String(settings[key] ?? SETTINGS_MEMBERS[key].default)} />
            </div>
          );
        })}
      </fieldset>
    </>
  );
}

/**
 * The metadata and settings a submitted form sets, as a merge patch: an emptied metadata member or an unset
 * sync interval is `null` (removed), so the same patch serves creating (where nulls are dropped) and editing.
 */
export function memberPatchOf(kind: ConnectionKind | null, form: FormData): { metadata: Members; settings: Members } {
  const members = membersOf(kind);
  const metadata: Members = {};
  for (const key of members.metadata) {
    const value = String(form.get(`metadata.${key}`) ?? '').trim();
    metadata[key] = value === '' ? null : value;
  }
  const settings: Members = {};
  for (const key of members.settings) {
    const raw = form.get(`settings.${key}`);
    if (key === 'sync_interval') settings[key] = raw ? String(raw) : null;
    else if (typeof SETTINGS_MEMBERS[key].default === 'boolean') settings[key] = raw === 'on';
    else settings[key] = raw === null || raw === '' ? Number.NaN : Number(raw);
  }
  return { metadata, settings };
}

/** Drops the nulls of a patch: what a new connection is created with. */
/** Members keyed by their GraphQL input names (camelCase), as the mutations take them. */
export function graphqlMembers(members: Members): Members {
  return Object.fromEntries(Object.entries(members).map(([key, value]) => [graphqlName(key), value]));
}

export function withoutNulls(members: Members): Members {
  return Object.fromEntries(Object.entries(members).filter(([, value]) => value !== null));
}

/** The API's problems with the connection `patch` makes of `current` (defaults for a new one); empty when valid. */
export function memberProblems(
  kind: ConnectionKind | null,
  patch: { metadata: Members; settings: Members },
  current?: { metadata: Members; settings: Members },
): string[] {
  const metadata = mergePatch(current?.metadata ?? {}, patch.metadata);
  const settings = mergePatch(current?.settings ?? defaultSettings(kind), patch.settings);
  return connectionMemberProblems(kind, { metadata, settings }).map((problem) => `${problem.field}: ${problem.message}`);
}
