import { useMutation, useQuery } from 'urql';
import { graphql } from '../generated';
import { ConfirmButton, ErrorMessage, Loading, PageHeader, Time } from '../ui';

const MyApprovals = graphql(`
  query ConsoleMyOAuthApprovals {
    myOAuthApprovals {
      id
      applicationName
      scope
      approvedAt
      expiresAt
    }
  }
`);

export const RevokeApproval = graphql(`
  mutation ConsoleRevokeOAuthApproval($id: ID!) {
    revokeOAuthApproval(id: $id) {
      id
    }
  }
`);

/** The partner applications the signed-in member approved; revoking one stops its tokens at once. */
export function ApprovedApplications() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: MyApprovals, requestPolicy: 'cache-and-network' });
  const [revoked, revoke] = useMutation(RevokeApproval);
  return (
    <>
      <PageHeader title="Approved applications" />
      <p>Applications you let act for you in this organization. Revoking one ends its access at once.</p>
      <ErrorMessage error={error ?? revoked.error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        data.myOAuthApprovals.length === 0 ? (
          <p>You have approved no application.</p>
        ) : (
          <div className="table-scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Application</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Approved</th>
                  <th scope="col">Ends</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.myOAuthApprovals.map((approval) => (
                  <tr key={approval.id}>
                    <td>{approval.applicationName}</td>
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
                        accessibleLabel={`Revoke ${approval.applicationName}`}
                        question={`Revoke ${approval.applicationName}? It can no longer act for you.`}
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
        )
      ) : null}
    </>
  );
}
