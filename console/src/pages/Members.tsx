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

const ResendInvitation = graphql(`
  mutation ConsoleResendInvitation($id: ID!) {
    resendInvitation(id: $id) {
      path
      expiresAt
      member {
        id
        email
      }
    }
  }
`);

const CreatePasswordReset = graphql(`
  mutation ConsoleCreatePasswordReset($id: ID!) {
    createPasswordReset(id: $id) {
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

/** A code's answer (an invitation, a resent one, a password reset): its URL is shown once. */
interface IssuedCode {
  path: string | null;
  expiresAt: string;
  member: { email: string };
}

/** What the page shows once after a code is issued. */
interface ShownCode {
  label: string;
  url: string;
  note: string;
}

function shownCode(kind: 'invitation' | 'password_reset', answer: IssuedCode): ShownCode {
  const { email } = answer.member;
  const what = kind === 'invitation' ? 'Invitation URL' : 'Password reset URL';
  return {
    label: `${what} for ${email}`,
    url: `${location.origin}${answer.path ?? ''}`,
    note: `Send it to ${email}: it works once, until ${formatTime(answer.expiresAt)}, and is shown only now.${
      kind === 'password_reset' ? ' Their password works until they choose a new one; then their other sessions end.' : ''
    }`,
  };
}

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
  const [resent, resend] = useMutation(ResendInvitation);
  const [reset, createReset] = useMutation(CreatePasswordReset);
  const [inviting, setInviting] = useState(false);
  const [issued, setIssued] = useState<ShownCode | null>(null);
  const reload = () => refetch({ requestPolicy: 'network-only' });

  async function submitInvitation(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const result = await invite({ email: String(form.get('email')).trim(), role: form.get('role') as MemberRole });
    const answer = result.data?.inviteMember;
    if (answer) {
      setIssued(shownCode('invitation', answer));
      setInviting(false);
      reload();
    }
  }

  async function resendInvitation(id: string) {
    const answer = (await resend({ id })).data?.resendInvitation;
    if (answer) setIssued(shownCode('invitation', answer));
  }

  async function createPasswordReset(id: string) {
    const answer = (await createReset({ id })).data?.createPasswordReset;
    if (answer) setIssued(shownCode('password_reset', answer));
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
          <p className="note">
            Inviting an email again clears its password and ends its sessions. For a forgotten password, use Reset password in the list: the
            password works until a new one is chosen.
          </p>
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
      {issued ? <SecretOnce label={issued.label} value={issued.url} note={issued.note} /> : null}
      <ErrorMessage error={error ?? changed.error ?? removed.error ?? resent.error ?? reset.error} />
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
                    <td className="row-actions">
                      {member.pending ? (
                        <button
                          type="button"
                          disabled={resent.fetching}
                          aria-label={`Resend invitation to ${member.email}`}
                          onClick={() => void resendInvitation(member.id)}
                        >
                          Resend invitation
                        </button>
                      ) : (
                        <button
                          type="button"
                          disabled={reset.fetching}
                          aria-label={`Reset password of ${member.email}`}
                          onClick={() => void createPasswordReset(member.id)}
                        >
                          Reset password
                        </button>
                      )}
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
