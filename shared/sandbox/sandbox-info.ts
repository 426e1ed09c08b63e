import * as v from 'valibot';

/**
 * `GET /sandbox/info` (local sandbox only): where the running sandbox keeps its data, its three
 * URLs and which applications it serves, so the CLIs (`npm run token`, `npm run tasks`, …) follow
 * the sandbox that is actually running. Never a secret: no keys, no tokens.
 */
const Urls = v.object({ account: v.string(), enclave: v.string(), express: v.string() });

export const SandboxInfo = v.object({
  sandbox: v.literal(true),
  data_dir: v.pipe(v.string(), v.description("Absolute path of the running sandbox's DATA_DIR.")),
  urls: Urls,
  applications: v.pipe(
    v.picklist(['dev', 'apps_file']),
    v.description(
      '"dev": the generated dev app (npm run token mints its tokens); "apps_file": the apps of APPS_FILE, which trust their own identity providers.',
    ),
  ),
  apps_file: v.optional(v.pipe(v.string(), v.description('Absolute path of APPS_FILE (applications "apps_file" only).'))),
  dev_app: v.optional(
    v.pipe(
      v.object({ app_id: v.string(), provider_id: v.string(), issuer: v.string() }),
      v.description('The dev app (applications "dev" only); its keys are in DATA_DIR/dev-app.json.'),
    ),
  ),
});
export type SandboxInfo = v.InferOutput<typeof SandboxInfo>;
