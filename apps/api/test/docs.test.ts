import { describe, expect, it } from "vitest";
import { createTestApi } from "./harness.js";

const api = createTestApi();

describe("docs page", () => {
  it("contacts no outside host: no validator badge, and a policy keeping requests on this server", async () => {
    const res = await api.request("/api/v1/docs");
    expect(res.status).toBe(200);
    const html = await res.text();
    // Swagger UI's default validatorUrl sends the spec's URL to validator.swagger.io.
    expect(html).toMatch(/validatorUrl:\s*null/);
    expect(html).not.toMatch(/https?:\/\//);
    const policy = res.headers.get("content-security-policy") ?? "";
    for (const directive of ["connect-src 'self'", "img-src 'self' data:", "form-action 'self'"]) {
      expect(policy).toContain(directive);
    }
  });
});
