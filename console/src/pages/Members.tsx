import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from 'urql';
import { graphql } from '../generated';
import { ConfirmButton, ErrorMessage, formatTime, Loading, SecretOnce, Time } from '../ui';
import { UserManagement } from './UserManagement';

const MembersQuery = graphql(`
  query ConsoleMembers {
    members {
      id
      email
      role
      pending
      createdAt
      lastSeenAt
    }
    currentMember {
      id
    }
  }
`);

const InviteMember = graphql(`
  mutation ConsoleInviteMember($email: String!, $role: MemberRole!) {
    inviteMember(email: $email, role: $role) {
      path
      expiresAt
      member {
        id
        email
      }
    }
  }
`);

const ChangeMemberRole = graphql(`
  mutation ConsoleChangeMemberRole($id: ID!, $role: MemberRole!) {
    changeMemberRole(id: $id, role: $role) {
      id
      role
    }
  }
`);

const RemoveMember = graphql(`
  mutation ConsoleRemoveMember($id: ID!) {
    removeMember(id: $id) {
      id
    }
  }
`);

const MEMBER_ROLES = ['admin', 'reader'] as const;
type MemberRole = (typeof MEMBER_ROLES)[number];

export function Members() {
  return (
    <UserManagement>
      <MemberList />
    </UserManagement>
  );
}

function MemberList() {
  const [{ data, error, fetching }, refetch] = useQuery({ query: MembersQuery, requestPolicy: 'cache-and-network' });
  const [invited, invite] = useMutation(InviteMember);
  const [changed, changeRole] = useMutation(ChangeMemberRole);
  const [removed, remove] = useMutation(RemoveMember);
  const [inviting, setInviting] = useState(false);
  const [invitation, setInvitation] = useState<{ email: string; url: string; expiresAt: string } | null>(null);
  const reload = () => refetch({ requestPolicy: 'network-only' });

  async function submitInvitation(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const result = await invite({ email: String(form.get('email')).trim(), role: form.get('role') as MemberRole });
    const answer = result.data?.inviteMember;
    if (answer) {
      setInvitation({ email: answer.member.email, url: `${location.origin}${answer.path}`, expiresAt: answer.expiresAt });
      setInviting(false);
      reload();
    }
  }

  return (
    <section aria-labelledby="members">
      <div className="section-header">
        <h2 id="members">Members</h2>
        {!inviting ? (
          <button type="button" className="primary" onClick={() => setInviting(true)}>
            Invite member
          </button>
        ) : null}
      </div>
      {inviting ? (
        <form className="card" onSubmit={submitInvitation} aria-labelledby="invite-member">
          <h3 id="invite-member">Invite member</h3>
          <label htmlFor="member-email">Email</label>
          <input id="member-email" name="email" type="email" required />
          <label htmlFor="member-role">Role</label>
          <select id="member-role" name="role" defaultValue="reader">
            <option value="admin">admin: everything within the organization</option>
            <option value="reader">reader: read-only</option>
          </select>
          <p className="note">Inviting an email again resets its password and ends its sessions.</p>
          <ErrorMessage error={invited.error} />
          <div className="actions">
            <button type="button" onClick={() => setInviting(false)}>
              Cancel
            </button>
            <button type="submit" className="primary" disabled={invited.fetching}>
              Invite
            </button>
          </div>
        </form>
      ) : null}
      {invitation ? (
        <SecretOnce
          label={`Invitation URL for ${invitation.email}`}
          value={invitation.url}
          note={`Send it to ${invitation.email}: it works once, until ${formatTime(invitation.expiresAt)}, and is shown only now.`}
        />
      ) : null}
      <ErrorMessage error={error ?? changed.error ?? removed.error} />
      {!data && fetching ? <Loading /> : null}
      {data ? (
        <div className="table-scroll">
          <table>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col" className="secondary">
                  State
                </th>
                <th scope="col" className="secondary">
                  Last seen
                </th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.members.map((member) => {
                const you = member.id === data.currentMember?.id;
                return (
                  <tr key={member.id}>
                    <td>
                      {member.email}
                      {you ? ' (you)' : ''}
                    </td>
                    <td>
                      <form
                        className="inline"
                        onSubmit={async (event) => {
                          event.preventDefault();
                          await changeRole({ id: member.id, role: new FormData(event.currentTarget).get('role') as MemberRole });
                          reload();
                        }}
                      >
                        <label className="visually-hidden" htmlFor={`role-${member.id}`}>
                          Role of {member.email}
                        </label>
                        <select id={`role-${member.id}`} name="role" defaultValue={member.role} key={member.role}>
                          {MEMBER_ROLES.map((role) => (
                            <option key={role} value={role}>
                              {role}
                            </option>
                          ))}
                        </select>
                        <button type="submit" disabled={changed.fetching} aria-label={`Change role of ${member.email}`}>
                          Change role
                        </button>
                      </form>
                    </td>
                    <td className="secondary">{member.pending ? 'invited' : 'active'}</td>
                    <td className="secondary">
                      <Time iso={member.lastSeenAt} />
                    </td>
                    <td>
                      <ConfirmButton
                        label="Remove"
                        accessibleLabel={`Remove ${member.email}`}
                        question={`Remove ${member.email} from the organization? Their sessions end at once.`}
                        confirmLabel="Remove"
                        onConfirm={async () => {
                          await remove({ id: member.id });
                          reload();
                        }}
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
    </section>
  );
}
