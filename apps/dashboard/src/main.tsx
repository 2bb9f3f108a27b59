import { QueryCache, QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { RouterProvider } from "@tanstack/react-router";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { ApiError } from "./api";
import { createAppRouter } from "./router";
import { sessionQuery } from "./session";
import "./styles.css";

const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({
    // A 401 anywhere means the session is gone: the layout then sends the user to sign in.
    onError: (err) => {
      if (err instanceof ApiError && err.status === 401)
        queryClient.setQueryData(sessionQuery.queryKey, null);
    },
  }),
  defaultOptions: {
    queries: {
      // A 4xx will not heal by asking again; a network blip or a 503 may.
      retry: (count, err) => count < 2 && !(err instanceof ApiError && err.status >= 400 && err.status < 500),
      refetchOnWindowFocus: true,
    },
  },
});

const router = createAppRouter(queryClient);

createRoot(document.getElementById("root") as HTMLElement).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <RouterProvider router={router} />
    </QueryClientProvider>
  </StrictMode>,
);
