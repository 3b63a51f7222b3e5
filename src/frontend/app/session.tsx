/**
 * Who the page speaks for (docs/dashboard.md, "Signing in"). With credentials configured, the page asks for the
 * basic-auth user and password or a token and signs in (`POST /api/v1/session`: an HttpOnly cookie, and a CSRF
 * token the page sends with every change); without, it says the server is open. What the principal's scopes do
 * not allow is not offered (`useCan`); the API refuses it anyway.
 */
import { type ComponentChildren, createContext, type InputHTMLAttributes } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';
import { ApiError, auth, session, type Who } from './api.ts';
import { Failure } from './status.tsx';

const Access = createContext<Who>({ principal: null, scopes: [], open: false });

/** Whether the page may offer what needs `scope` (`admin` holds every scope). */
export function useCan(): (scope: 'write' | 'admin') => boolean {
  const who = useContext(Access);
  return (scope) => who.open || who.scopes.includes(scope) || who.scopes.includes('admin');
}

/** Shows `children` once signed in (or when the server is open), the sign-in form otherwise. */
export function SessionGate({ children }: { children: (who: Who, signOut: () => void) => ComponentChildren }) {
  const [who, setWho] = useState<Who | null | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>(undefined);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const admit = (answer: Who) => {
    auth.csrf = answer.csrf;
    setNotice(undefined);
    setWho(answer);
  };
  useEffect(() => {
    auth.onSignedOut = (message) => {
      auth.csrf = undefined;
      setNotice(message);
      setWho(null);
    };
    session.who().then(admit, (error: unknown) => {
      if (error instanceof ApiError && error.status === 401) setWho(null);
      else setFailure((error as Error).message);
    });
  }, []);
  if (failure !== undefined) return <Failure message={failure} prefix="Cannot reach Vigie" />;
  if (who === undefined) return <p class="loading">Loading…</p>;
  if (who === null) return <SignIn notice={notice} onSignedIn={admit} />;
  const signOut = () => {
    session.signOut().finally(() => {
      auth.csrf = undefined;
      setNotice('Signed out.');
      setWho(null);
    });
  };
  return <Access.Provider value={who}>{children(who, signOut)}</Access.Provider>;
}

function SignIn({ notice, onSignedIn }: { notice: string | undefined; onSignedIn: (who: Who) => void }) {
  const [withToken, setWithToken] = useState(false);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSignedIn(await session.signIn(withToken ? { token } : { username, password }));
    } catch (failure) {
      const refusal = failure as ApiError;
      setError(
        refusal.errors?.length ? refusal.errors.map((e) => `${e.field}: ${e.message}`).join('; ') : refusal.message,
      );
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="sign-in">
      <h1>Vigie</h1>
      <form aria-label="Sign in" onSubmit={(event) => void submit(event)}>
        <h2>Sign in</h2>
        {notice !== undefined && (
          <p class="notice" role="status">
            {notice}
          </p>
        )}
        <div class="windows" role="group" aria-label="sign in with">
          {SIGN_IN_WITH.map(([label, token]) => (
            <button
              type="button"
              aria-pressed={withToken === token}
              class={withToken === token ? 'selected' : ''}
              onClick={() => setWithToken(token)}
            >
              {label}
            </button>
          ))}
        </div>
        {withToken ? (
          <Field {...TOKEN} value={token} set={setToken} />
        ) : (
          <>
            <Field {...USER} value={username} set={setUsername} />
            <Field {...PASSWORD} value={password} set={setPassword} />
          </>
        )}
        <Failure message={error} />
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

/** The sign-in form's two ways in: its labels, and whether each is the token. */
const SIGN_IN_WITH = [
  ['User and password', false],
  ['Token', true],
] as const;

/** What a field of the sign-in form asks for; a secret is typed unseen. */
interface Input {
  id: string;
  label: string;
  name: string;
  secret: boolean;
  autoComplete: string;
}
const USER: Input = { id: 'sign-in-user', label: 'User', name: 'username', secret: false, autoComplete: 'username' };
const PASSWORD: Input = {
  id: 'sign-in-password',
  label: 'Password',
  name: 'password',
  secret: true,
  autoComplete: 'current-password',
};
const TOKEN: Input = { id: 'sign-in-token', label: 'Token', name: 'token', secret: true, autoComplete: 'off' };

/** One labelled input of the sign-in form. */
function Field({
  id,
  label,
  name,
  secret,
  autoComplete,
  value,
  set,
}: Input & { value: string; set: (value: string) => void }) {
  // Typed one way or the other: preact's types tell a password input's attributes from a text input's.
  const kind: InputHTMLAttributes<HTMLInputElement> = secret ? { type: 'password' } : { type: 'text' };
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input
        {...kind}
        id={id}
        name={name}
        autoComplete={autoComplete}
        value={value}
        onInput={(event) => set(event.currentTarget.value)}
      />
    </div>
  );
}

/** The theme: the system's, unless the toggle chose one (kept in this browser). */
export function ThemeToggle() {
  const [theme, setTheme] = useState(() => localStorage.getItem('vigie-theme') ?? '');
  useEffect(() => {
    if (theme === '') delete document.documentElement.dataset.theme;
    else document.documentElement.dataset.theme = theme;
    localStorage.setItem('vigie-theme', theme);
  }, [theme]);
  const dark = theme === 'dark' || (theme === '' && matchMedia('(prefers-color-scheme: dark)').matches);
  return (
    <button type="button" class="theme" aria-pressed={dark} onClick={() => setTheme(dark ? 'light' : 'dark')}>
      {dark ? 'Light mode' : 'Dark mode'}
    </button>
  );
}
