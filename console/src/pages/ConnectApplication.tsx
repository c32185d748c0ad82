import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { Link, useLocation } from 'wouter';
import { graphqlMembers, kindOf, MemberFields, memberPatchOf, memberProblems, withoutNulls } from '../connection-members';
import { graphql } from '../generated';
import { useCanWrite } from '../session';
import { AppLogo, ErrorMessage, Loading, PageHeader, ProblemList } from '../ui';

const CatalogQuery = graphql(`
  query ConsoleCatalog($search: String) {
    applications(search: $search, limit: 100) {
      nodes {
        id
        name
        description
        logoUrl
        category {
          id
          name
          connectionKind
        }
      }
    }
  }
`);

const CreateConnection = graphql(`
  mutation ConsoleCreateConnection($input: CreateConnectionInput!) {
    createConnection(input: $input) {
      id
    }
  }
`);

const VIA = ['manual', 'api_key', 'oauth', 'partner'] as const;

export function ConnectApplication() {
  const canWrite = useCanWrite();
  const [search, setSearch] = useState('');
  const [applicationId, setApplicationId] = useState('');
  const [{ data, error, fetching }] = useQuery({ query: CatalogQuery, variables: { search: search.trim() || null } });
  const [created, create] = useMutation(CreateConnection);
  const [problems, setProblems] = useState<string[]>([]);
  const [, navigate] = useLocation();
  const application = data?.applications.nodes.find((a) => a.id === applicationId);
  const kind = kindOf(application?.category.connectionKind);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!application) return;
    const form = new FormData(event.currentTarget);
    const members = memberPatchOf(kind, form);
    const found = memberProblems(kind, members);
    setProblems(found);
    if (found.length > 0) return;
    const name = String(form.get('name') ?? '').trim();
    const description = String(form.get('description') ?? '').trim();
    const result = await create({
      input: {
        applicationId: application.id,
        via: form.get('via') as (typeof VIA)[number],
        metadata: graphqlMembers(withoutNulls(members.metadata)),
        settings: graphqlMembers(withoutNulls(members.settings)),
        ...(name ? { name } : {}),
        ...(description ? { description } : {}),
      },
    });
    if (result.data) navigate(`/connections/${result.data.createConnection.id}`);
  }

  if (!canWrite) return <p>Only an admin connects applications.</p>;
  return (
    <>
      <PageHeader title="Connect an application" />
      <p>
        <Link href="/connections">Connections</Link> / Connect an application
      </p>
      <div className="filters">
        <div>
          <label htmlFor="catalog-search">Search the catalog</label>
          <input id="catalog-search" type="search" value={search} onChange={(e) => setSearch(e.target.value)} />
        </div>
      </div>
      <ErrorMessage error={error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <fieldset className="catalog">
          <legend>Application</legend>
          {data.applications.nodes.length === 0 ? <p>No application matches.</p> : null}
          {data.applications.nodes.map((a) => (
            <label key={a.id} className="choice">
              <input
                type="radio"
                name="application"
                value={a.id}
                checked={a.id === applicationId}
                onChange={() => setApplicationId(a.id)}
              />
              <AppLogo url={a.logoUrl} size={32} />
              <span>
                <strong>{a.name}</strong> <span className="note">{a.category.name}</span>
                <br />
                <span className="note">{a.description}</span>
              </span>
            </label>
          ))}
        </fieldset>
      ) : null}
      {application ? (
        <form className="card" onSubmit={submit} aria-label={`Connect ${application.name}`} key={application.id}>
          <h2>
            <AppLogo url={application.logoUrl} /> Connect {application.name}
          </h2>
          <label htmlFor="connection-name">Name</label>
          <input id="connection-name" name="name" placeholder={application.name} maxLength={200} />
          <label htmlFor="connection-description">Description</label>
          <textarea id="connection-description" name="description" maxLength={2000} rows={2} />
          <label htmlFor="connection-via">Via</label>
          <select id="connection-via" name="via" defaultValue="manual">
            {VIA.map((via) => (
              <option key={via} value={via}>
                {via}
              </option>
            ))}
          </select>
          <MemberFields kind={kind} />
          <ProblemList problems={problems} />
          <ErrorMessage error={created.error} />
          <button type="submit" className="primary" disabled={created.fetching}>
            Connect
          </button>
        </form>
      ) : null}
    </>
  );
}
