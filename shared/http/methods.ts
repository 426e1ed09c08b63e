/**
 * The methods answered where routes declare `declared`: HEAD too wherever GET is (RFC 9110: HEAD
 * is GET without the body), sorted, as `Allow` lists them. The resource tree
 * (infra/api-resources.ts) gives each GET a HEAD method by the same rule.
 */
export function withHead(declared: readonly string[]): string[] {
  const methods = new Set(declared);
  if (methods.has('GET')) methods.add('HEAD');
  return [...methods].sort();
}
