// What a single sign-on sends the browser back to the console with: `?sso=signed_in` (the session cookie is set)
// or `?sso_error=<reason>`. Each is read once and taken out of the address bar.

/** Why the gateway sent the browser back from a single sign-on, in the words the sign-in page shows. */
const SSO_ERRORS: Record<string, string> = {
  unknown_organization: 'No organization signs in with an identity provider for this email domain or name.',
  state: 'The sign-in expired, was already used, or was started in another browser: start again.',
  provider: 'The identity provider did not sign you in.',
  token: "The identity provider's answer did not pass the checks: start again, or ask an admin to check the settings.",
  email_unverified: 'The identity provider did not say that your email address is verified.',
  email_domain: "Your email address is not in one of the organization's domains.",
  not_invited: 'You are not a member of this organization yet: ask an admin for an invitation.',
  no_role: 'The identity provider named no role (admin or reader) for you: ask an admin.',
  subject_conflict: 'This email address is linked to another account of the identity provider: ask an admin.',
};

function takeParameter(name: string): string | null {
  const params = new URLSearchParams(location.search);
  const value = params.get(name);
  if (value === null) return null;
  params.delete(name);
  const rest = params.toString();
  history.replaceState(history.state, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`);
  return value;
}

/** Whether the browser has just come back signed in from the identity provider. */
export function takeSsoSignedIn(): boolean {
  return takeParameter('sso') === 'signed_in';
}

/** The reason a single sign-on came back refused, in words; null when it did not. */
export function takeSsoError(): string | null {
  const reason = takeParameter('sso_error');
  if (reason === null) return null;
  return SSO_ERRORS[reason] ?? 'The single sign-on did not work: start again.';
}
