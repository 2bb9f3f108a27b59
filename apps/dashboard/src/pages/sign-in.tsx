import { useQueryClient } from "@tanstack/react-query";
import { getRouteApi, useRouter } from "@tanstack/react-router";
import { type FormEvent, useEffect, useState } from "react";
import { ErrorMessage } from "../components/error-message";
import { signIn } from "../session";

const route = getRouteApi("/sign-in");

/** Only a path of this site: never send the user elsewhere after signing in. */
const safeRedirect = (to: string | undefined) =>
  to?.startsWith("/") && !to.startsWith("//") && !to.startsWith("/sign-in") ? to : undefined;

export function SignInPage() {
  const { redirect } = route.useSearch();
  const router = useRouter();
  const queryClient = useQueryClient();
  const [key, setKey] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [pending, setPending] = useState(false);

  useEffect(() => {
    document.title = "Sign in · Spool";
  }, []);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    setPending(true);
    try {
      const session = await signIn(queryClient, key.trim());
      const to = safeRedirect(redirect);
      if (session.kind === "admin") await router.navigate({ to: "/projects" });
      else if (to) router.history.push(to);
      else await router.navigate({ to: "/runs" });
    } catch (err) {
      setError(err);
    } finally {
      setPending(false);
    }
  };

  return (
    <main id="main" className="sign-in">
      <h1>Sign in to Spool</h1>
      <form onSubmit={submit} className="card" aria-describedby="sign-in-hint">
        <div className="field">
          <label htmlFor="api-key">API key</label>
          <input
            id="api-key"
            name="api_key"
            type="password"
            autoComplete="off"
            required
            value={key}
            onChange={(e) => setKey(e.target.value)}
          />
        </div>
        <p className="hint" id="sign-in-hint">
          A project key (sk_…), or the admin key to choose a project. <code>npm run dev</code> prints both;
          the key is kept in an HttpOnly cookie, never in the page.
        </p>
        <ErrorMessage error={error} />
        <button type="submit" className="primary" disabled={pending}>
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
