import { useMutation, useQuery } from 'urql';
import { graphql } from '../generated';
import { ConfirmButton, ErrorMessage, Loading, PageHeader, Pager, Time, useCursorPages } from '../ui';

const CurrentMember = graphql(`
  query ConsoleCurrentMember {
    currentMember {
      id
    }
  }
`);

const ApprovalsQuery = graphql(`
  query ConsoleOAuthApprovals($filter: OAuthApprovalFilter, $limit: Int!, $after: String) {
    oauthApprovalList(filter: $filter, limit: $limit, after: $after) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      nodes {
        id
        applicationName
        memberEmail
        scope
        approvedAt
        expiresAt
      }
    }
  }
`);

const RevokeApproval = graphql(`
  mutation ConsoleRevokeOAuthApproval($id: ID!) {
    revokeOAuthApproval(id: $id) {
      id
    }
  }
`);

const PAGE = 50;

/** The partner applications the signed-in member approved; revoking one stops its tokens at once. */
export function ApprovedApplications() {
  const [{ data, error }] = useQuery({ query: CurrentMember });
  const memberId = data?.currentMember?.id;
  return (
    <>
      <PageHeader title="Approved applications" />
      <p>Applications you let act for you in this organization. Revoking one ends its access at once.</p>
      <ErrorMessage error={error} />
      {data && !memberId ? <p>Sign in as a member of the organization to see the applications you approved.</p> : null}
      {memberId ? <ApprovalList memberId={memberId} /> : null}
    </>
  );
}

/**
 * Approvals page by page, newest first, each with its Revoke: the signed-in member's own (`memberId`), or, for an
 * admin, the whole organization's with the member who gave each.
 */
export function ApprovalList({ memberId }: { memberId?: string }) {
  const scope = { filter: memberId ? { memberId: { eq: memberId } } : null };
  const pages = useCursorPages(scope);
  const [{ data, error, fetching }, refetch] = useQuery({
    query: ApprovalsQuery,
    variables: { ...scope, limit: PAGE, after: pages.after },
    requestPolicy: 'cache-and-network',
  });
  const [revoked, revoke] = useMutation(RevokeApproval);
  const list = data?.oauthApprovalList;
  const organization = memberId === undefined;
  return (
    <>
      <ErrorMessage error={error ?? revoked.error} />
      {!data && fetching ? <Loading /> : null}
      {list ? (
        list.totalCount === 0 ? (
          <p>{organization ? 'No member has approved an application.' : 'You have approved no application.'}</p>
        ) : (
          <>
            <div className="table-scroll">
              <table aria-label={organization ? 'Approvals' : 'Approved applications'}>
                <thead>
                  <tr>
                    <th scope="col">Application</th>
                    {organization ? <th scope="col">Member</th> : null}
                    <th scope="col">Scopes</th>
                    <th scope="col">Approved</th>
                    <th scope="col">Ends</th>
                    <th scope="col">
                      <span className="visually-hidden">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.nodes.map((approval) => (
                    <tr key={approval.id}>
                      <td>{approval.applicationName}</td>
                      {organization ? <td>{approval.memberEmail}</td> : null}
                      <td>{approval.scope}</td>
                      <td>
                        <Time iso={approval.approvedAt} />
                      </td>
                      <td>
                        <Time iso={approval.expiresAt} />
                      </td>
                      <td>
                        <ConfirmButton
                          label="Revoke"
                          accessibleLabel={
                            organization
                              ? `Revoke ${approval.applicationName} for ${approval.memberEmail}`
                              : `Revoke ${approval.applicationName}`
                          }
                          question={
                            organization
                              ? `Revoke ${approval.memberEmail}'s approval of ${approval.applicationName}?`
                              : `Revoke ${approval.applicationName}? It can no longer act for you.`
                          }
                          confirmLabel="Revoke"
                          onConfirm={async () => {
                            await revoke({ id: approval.id });
                            refetch({ requestPolicy: 'network-only' });
                          }}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Pager label="Approval pages" pages={pages} pageInfo={list.pageInfo} limit={PAGE} total={list.totalCount} />
          </>
        )
      ) : null}
    </>
  );
}
