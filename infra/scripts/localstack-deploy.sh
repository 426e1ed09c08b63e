#!/usr/bin/env bash
# Deploy PerpWallet-Stateful and PerpWallet-Services to a running LocalStack with cdklocal,
# deletion protection off, then print the API URLs.
#
#   npm run localstack:deploy
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
# Every service the two stacks (and the CDK bootstrap stack) create resources in.
REQUIRED_SERVICES="cloudformation s3 ssm sts iam ecr lambda logs dynamodb kms secretsmanager apigatewayv2"

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
  || die "LocalStack is not reachable at $LOCALSTACK_URL. Start it (e.g. 'localstack start -d') or set LOCALSTACK_URL."

MISSING="$(HEALTH="$HEALTH" node -e '
  const services = JSON.parse(process.env.HEALTH).services ?? {};
  const missing = process.argv.slice(1).filter((s) => !["available", "running"].includes(services[s]));
  process.stdout.write(missing.join(" "));
' $REQUIRED_SERVICES)" || die "Unexpected answer from $LOCALSTACK_URL/_localstack/health: $HEALTH"
if [ -n "$MISSING" ]; then
  hint=""
  case " $MISSING " in *" apigatewayv2 "*) hint=" HTTP APIs (apigatewayv2) need a LocalStack edition that includes them (set LOCALSTACK_AUTH_TOKEN).";; esac
  die "LocalStack does not offer: $MISSING.$hint"
fi
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

step "Deploying PerpWallet-Stateful and PerpWallet-Services (deletionProtection=false)"
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
step "Stack outputs (also in ${OUTPUTS_FILE#"$ROOT"/})"
EDGE_PORT="$(node -p 'new URL(process.argv[1]).port || "4566"' "$LOCALSTACK_URL")" node -e '
  const outputs = JSON.parse(require("node:fs").readFileSync(process.argv[1], "utf8"));
  for (const [stack, values] of Object.entries(outputs)) {
    for (const [name, value] of Object.entries(values)) {
      if (name.startsWith("Exports")) continue;
      let line = `${stack}.${name} = ${value}`;
      // An AWS-style execute-api URL is reachable on LocalStack under its local domain.
      const api = /^https?:\/\/([a-z0-9]+)\.execute-api\.[^/]*amazonaws\.com/.exec(String(value));
      if (api) line += `\n    local: http://${api[1]}.execute-api.localhost.localstack.cloud:${process.env.EDGE_PORT}/`;
      console.log(line);
    }
  }
' "$OUTPUTS_FILE"
