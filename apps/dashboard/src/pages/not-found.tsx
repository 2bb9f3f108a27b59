import { Link } from "@tanstack/react-router";

export function NotFoundPage() {
  return (
    <main id="main" className="sign-in">
      <h1>Page not found</h1>
      <p>
        There is no page here. <Link to="/runs">Go to the runs</Link>.
      </p>
    </main>
  );
}
