import { StrictMode } from "react";
import { createRoot } from "react-dom/client";

function App() {
  return <h1>Spool</h1>;
}

createRoot(document.getElementById("root") as HTMLElement).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
