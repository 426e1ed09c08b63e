#!/usr/bin/env bash
# Deploy every stack of the app (PerpWallet-Stateful, -ApiGatewayLogging, -Enclave, -Transfers,
# -Account, -Express: docs/deploy.md, "Stacks") to a running LocalStack with cdklocal, deletion
# protection off, then print the API URLs and the `npm run test:deployed` command.
# LocalStack's free edition (Hobby plan, or the Community image 4.14.0) serves everything the
# stacks use: REST APIs (apigateway), not HTTP APIs (apigatewayv2). test/infra/localstack-coverage.test.ts
# checks that statically; docs/deploy.md has the commands to start LocalStack.
#
#   npm run localstack:deploy          (tear down: npm run localstack:destroy)
#
# LOCALSTACK_URL  where LocalStack answers (default: $AWS_ENDPOINT_URL, else http://localhost:4566)
# AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3  passed to cdklocal; set both or neither (cdklocal's rule).
# CHAINS_CONFIG_FILE  chains config to deploy (default infra/config/chains.mainnet.json); its rpc_url
#                     fields go to the Secrets Manager secret RPC_URLS_SECRET, not into the template.
# RPC_URLS_SECRET     name of that secret (default perp-wallet/rpc-urls); the stateful stack creates
#                     it with a placeholder, this script then puts the URLs in it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

LOCALSTACK_URL="${LOCALSTACK_URL:-${AWS_ENDPOINT_URL:-http://localhost:4566}}"
LOCALSTACK_URL="${LOCALSTACK_URL%/}"
OUTPUTS_FILE="$ROOT/cdk.out/localstack-outputs.json"
CHAINS_CONFIG_FILE="${CHAINS_CONFIG_FILE:-infra/config/chains.mainnet.json}"
RPC_URLS_SECRET="${RPC_URLS_SECRET:-perp-wallet/rpc-urls}"
REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
# Every service the stacks (and the CDK bootstrap stack) create resources in; stepfunctions for
# PerpWallet-Transfers' state machine.
# (No ecr: the bootstrap stack's repository is created without the ECR API and we publish no images.)
REQUIRED_SERVICES="cloudformation s3 ssm sts iam lambda logs dynamodb kms secretsmanager apigateway stepfunctions"

die() { printf 'localstack-deploy: %s\n' "$*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

# --- preconditions -------------------------------------------------------------------------
command -v node >/dev/null 2>&1 || die "node not found. Run this through 'npm run localstack:deploy'."
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 24 ? 0 : 1)' \
  || die "Node $(node --version) found, the app needs Node >= 24. Run it through 'npm run localstack:deploy' (uses node_modules/.bin/node)."
[ -f node_modules/aws-cdk/package.json ] || die "node_modules/aws-cdk is missing. Run 'npm ci' first."
if [ -n "${AWS_ENDPOINT_URL:-}" ] && [ -z "${AWS_ENDPOINT_URL_S3:-}" ]; then
  die "AWS_ENDPOINT_URL is set but AWS_ENDPOINT_URL_S3 is not; cdklocal needs both (or unset both for the defaults)."
fi

step "Checking LocalStack at $LOCALSTACK_URL"
HEALTH="$(node -e '
  fetch(process.argv[1] + "/_localstack/health", { signal: AbortSignal.timeout(5000) })
    .then((r) => (r.ok ? r.text() : Promise.reject(new Error("HTTP " + r.status))))
    .then((body) => process.stdout.write(body), (e) => { console.error(e.message); process.exit(1); });
' "$LOCALSTACK_URL")" \
  || die "LocalStack is not reachable at $LOCALSTACK_URL. Start it (docs/deploy.md, LocalStack) or set LOCALSTACK_URL."

MISSING="$(HEALTH="$HEALTH" node -e '
  const services = JSON.parse(process.env.HEALTH).services ?? {};
  const missing = process.argv.slice(1).filter((s) => !["available", "running"].includes(services[s]));
  process.stdout.write(missing.join(" "));
' $REQUIRED_SERVICES)" || die "Unexpected answer from $LOCALSTACK_URL/_localstack/health: $HEALTH"
[ -z "$MISSING" ] || die "LocalStack does not offer: $MISSING. Every one of them is in the free edition (Hobby plan, or the Community image 4.14.0); was LocalStack started with SERVICES limiting them?"
echo "LocalStack is up: $(HEALTH="$HEALTH" node -p 'const h = JSON.parse(process.env.HEALTH); `${h.edition ?? "?"} edition ${h.version ?? ""}`')"

# cdklocal wraps the aws-cdk CLI and must be able to require it: install both in the same npx
# environment, the CLI at the version this repo pins (aws-cdk@3 cannot read our cloud assemblies).
CDK_VERSION="$(node -p 'require("./node_modules/aws-cdk/package.json").version')"
cdklocal() { npx --yes --package=aws-cdk-local@3 --package="aws-cdk@$CDK_VERSION" -- cdklocal "$@"; }

# --- RPC URLs (read now, written once the stateful stack has created the secret) -------------
[ -f "$CHAINS_CONFIG_FILE" ] || die "$CHAINS_CONFIG_FILE not found (CHAINS_CONFIG_FILE)."
RPC_URLS="$(node -e '
  const chains = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  const urls = Object.fromEntries(["ETH", "ARB", "POL", "INK", "SOL"].map((code) => [code, chains[code]?.rpc_url]));
  const missing = Object.keys(urls).filter((code) => !urls[code]);
  if (missing.length) { console.error("no rpc_url for " + missing.join(", ")); process.exit(1); }
  process.stdout.write(JSON.stringify(urls));
' "$CHAINS_CONFIG_FILE")" || die "$CHAINS_CONFIG_FILE must give every chain an rpc_url."

# --- deploy --------------------------------------------------------------------------------
step "Bootstrapping the LocalStack environment (cdklocal + aws-cdk@$CDK_VERSION)"
cdklocal bootstrap -c deletionProtection=false \
  || die "cdklocal bootstrap failed (see above)."

# --all: the seven stacks in dependency order (each service stack imports from the stateful one, the
# account and express stacks and the transfers stack from the enclave's, the account stack from the
# transfers stack); the outputs file groups each stack's outputs.
step "Deploying every stack: PerpWallet-Stateful, -ApiGatewayLogging, -Enclave, -Transfers, -Account, -Express (deletionProtection=false)"
mkdir -p "$(dirname "$OUTPUTS_FILE")"
cdklocal deploy --all --require-approval never -c deletionProtection=false \
  -c chainsConfig="$CHAINS_CONFIG_FILE" -c rpcUrlsSecret="$RPC_URLS_SECRET" --outputs-file "$OUTPUTS_FILE" \
  || die "cdklocal deploy failed (see above). On an x86_64 host, start LocalStack with LAMBDA_IGNORE_ARCHITECTURE=1 (our functions are arm64)."

# The stack created the secret holding a placeholder (no URL in any template); until this runs,
# chain calls answer 502 CHAIN_UNAVAILABLE.
step "Putting the RPC URLs of $CHAINS_CONFIG_FILE in the secret $RPC_URLS_SECRET"
if command -v awslocal >/dev/null 2>&1; then
  AWS_ENDPOINT_URL="$LOCALSTACK_URL" awslocal secretsmanager put-secret-value --region "$REGION" --secret-id "$RPC_URLS_SECRET" \
    --secret-string "$RPC_URLS" >/dev/null \
    || die "awslocal secretsmanager put-secret-value failed (see above)."
else
  # No awslocal: the same call with the AWS SDK from node_modules (LocalStack accepts any credentials).
  RPC_URLS="$RPC_URLS" AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}" node --input-type=module -e '
    import { SecretsManagerClient, PutSecretValueCommand } from "@aws-sdk/client-secrets-manager";
    const [endpoint, region, secretId] = process.argv.slice(1);
    await new SecretsManagerClient({ endpoint, region }).send(new PutSecretValueCommand({ SecretId: secretId, SecretString: process.env.RPC_URLS }));
  ' "$LOCALSTACK_URL" "$REGION" "$RPC_URLS_SECRET" || die "Putting the value of $RPC_URLS_SECRET in LocalStack failed (see above)."
fi
echo "$RPC_URLS_SECRET set (region $REGION)."

# --- report --------------------------------------------------------------------------------
# A REST API's invoke URL output reads https://{id}.execute-api.{region}.{URLSuffix}/{stage}/
# (on LocalStack URLSuffix is its own host, localhost.localstack.cloud). LocalStack documents two
# forms that reach it: http://{id}.execute-api.localhost.localstack.cloud:4566/{stage}/ and, where
# that name does not resolve, {LOCALSTACK_URL}/_aws/execute-api/{id}/{stage}/.
step "Stack outputs (also in ${OUTPUTS_FILE#"$ROOT"/})"
TEST_ENV="$(node -e '
  const [outputsFile, localstackUrl, region] = process.argv.slice(1);
  const outputs = JSON.parse(require("node:fs").readFileSync(outputsFile, "utf8"));
  const edge = new URL(localstackUrl);
  const port = edge.port || "4566";
  const onThisHost = ["localhost", "127.0.0.1", "localhost.localstack.cloud"].includes(edge.hostname);
  const api = (value) => /^https?:\/\/([a-z0-9]+)\.execute-api\.[^/]+\/([^/?#]+)\/?$/.exec(String(value));
  const local = (id, stage) => ({
    host: `http://${id}.execute-api.localhost.localstack.cloud:${port}/${stage}`,
    path: `${localstackUrl}/_aws/execute-api/${id}/${stage}`,
  });
  const urls = {};
  const all = Object.entries(outputs).flatMap(([stack, values]) => Object.entries(values).map(([name, value]) => ({ stack, name, value })));
  for (const { stack, name, value } of all) {
    if (name.startsWith("Exports")) continue;
    let line = `${stack}.${name} = ${value}`;
    const match = api(value);
    if (match) {
      const forms = local(match[1], match[2]);
      line += `\n    local: ${forms.host}/\n       or: ${forms.path}/`;
      const service = /^(Account|Enclave|Express)Api/.exec(name)?.[1]?.toUpperCase();
      // Our own <Service>ApiUrl output wins over any other output of the same API.
      if (service && (!urls[service] || name === `${service[0]}${service.slice(1).toLowerCase()}ApiUrl`)) urls[service] = onThisHost ? forms.host : forms.path;
    }
    console.error(line);
  }
  const output = (name) => all.find((o) => o.name === name)?.value;
  const env = {
    ACCOUNT_URL: urls.ACCOUNT, ENCLAVE_URL: urls.ENCLAVE, EXPRESS_URL: urls.EXPRESS,
    TABLE_NAME: output("TableName"), OP_JWT_KMS_KEY_ID: output("OpJwtKeyId"), SPONSOR_KMS_KEY_ID: output("SponsorKeyId"),
    AWS_ENDPOINT_URL: localstackUrl, DYNAMODB_ENDPOINT: localstackUrl, AWS_REGION: region,
    AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test",
  };
  const missing = Object.keys(env).filter((k) => !env[k]);
  if (missing.length) { console.error(`no output for ${missing.join(", ")}`); process.exit(1); }
  process.stdout.write(Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" \\\n  "));
' "$OUTPUTS_FILE" "$LOCALSTACK_URL" "$REGION")" \
  || die "The outputs in ${OUTPUTS_FILE#"$ROOT"/} lack what the deployed tests need (see above)."

# What test/api/support/global-setup.ts (setupDeployed) reads: the three API URLs, the table and
# the op_jwt key (it registers two test apps in the table), the endpoint for its DynamoDB and KMS
# clients; and the gas sponsor's key, which `npm run sponsor:setup` reads as SPONSOR_KMS_KEY_ID.
# LocalStack accepts any credentials.
step "Run the API tests against this deployment"
printf '%s \\\n  npm run test:deployed\n' "$TEST_ENV"
echo
echo "Tear down: npm run localstack:destroy"
