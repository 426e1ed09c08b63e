#!/usr/bin/env bash
# Delete every stack of the app (the service stacks first, then PerpWallet-Stateful) from a running
# LocalStack (cdklocal destroy --all), the counterpart of localstack-deploy.sh.
#
#   npm run localstack:destroy
#
# LOCALSTACK_URL  where LocalStack answers (default: $AWS_ENDPOINT_URL, else http://localhost:4566)
# AWS_ENDPOINT_URL / AWS_ENDPOINT_URL_S3  passed to cdklocal; set both or neither (cdklocal's rule).
# CHAINS_CONFIG_FILE, RPC_URLS_SECRET  as given to localstack-deploy.sh (the app is synthesized again
#                     to find the stacks; the same context keeps it the same app).
#
# The KMS keys are retained by design (infra/stateful-stack.ts) and the CDKToolkit bootstrap stack
# stays; LocalStack's free edition keeps state in memory only, so stopping the container discards
# them (docker stop localstack, or localstack stop).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

LOCALSTACK_URL="${LOCALSTACK_URL:-${AWS_ENDPOINT_URL:-http://localhost:4566}}"
LOCALSTACK_URL="${LOCALSTACK_URL%/}"
CHAINS_CONFIG_FILE="${CHAINS_CONFIG_FILE:-infra/config/chains.mainnet.json}"
RPC_URLS_SECRET="${RPC_URLS_SECRET:-perp-wallet/rpc-urls}"

die() { printf 'localstack-destroy: %s\n' "$*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

# --- preconditions -------------------------------------------------------------------------
command -v node >/dev/null 2>&1 || die "node not found. Run this through 'npm run localstack:destroy'."
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 24 ? 0 : 1)' \
  || die "Node $(node --version) found, the app needs Node >= 24. Run it through 'npm run localstack:destroy' (uses node_modules/.bin/node)."
[ -f node_modules/aws-cdk/package.json ] || die "node_modules/aws-cdk is missing. Run 'npm ci' first."
[ -f "$CHAINS_CONFIG_FILE" ] || die "$CHAINS_CONFIG_FILE not found (CHAINS_CONFIG_FILE)."
if [ -n "${AWS_ENDPOINT_URL:-}" ] && [ -z "${AWS_ENDPOINT_URL_S3:-}" ]; then
  die "AWS_ENDPOINT_URL is set but AWS_ENDPOINT_URL_S3 is not; cdklocal needs both (or unset both for the defaults)."
fi

step "Checking LocalStack at $LOCALSTACK_URL"
node -e '
  fetch(process.argv[1] + "/_localstack/health", { signal: AbortSignal.timeout(5000) })
    .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); })
    .catch((e) => { console.error(e.message); process.exit(1); });
' "$LOCALSTACK_URL" || die "LocalStack is not reachable at $LOCALSTACK_URL: nothing to destroy there (a stopped LocalStack has already lost its state)."

# The same cdklocal as localstack-deploy.sh: aws-cdk-local@3 driving the CLI version this repo pins.
CDK_VERSION="$(node -p 'require("./node_modules/aws-cdk/package.json").version')"
cdklocal() { npx --yes --package=aws-cdk-local@3 --package="aws-cdk@$CDK_VERSION" -- cdklocal "$@"; }

# --- destroy -------------------------------------------------------------------------------
step "Destroying every stack: the service stacks (importers first), then PerpWallet-Stateful (cdklocal + aws-cdk@$CDK_VERSION)"
cdklocal destroy --all --force -c deletionProtection=false \
  -c chainsConfig="$CHAINS_CONFIG_FILE" -c rpcUrlsSecret="$RPC_URLS_SECRET" \
  || die "cdklocal destroy failed (see above). A stack deployed with deletion protection on cannot be destroyed; restart LocalStack instead."

echo "Done. The KMS keys (retained) and the CDKToolkit stack go when LocalStack stops."
