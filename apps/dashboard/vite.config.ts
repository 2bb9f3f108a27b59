import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// The API serves dist/ at / on its own port (apps/api/src/dashboard.ts): everything is bundled,
// nothing is loaded from elsewhere at run time.
export default defineConfig({
  plugins: [react()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: false, assetsDir: "assets" },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
