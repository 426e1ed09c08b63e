import type { RouteDefinition } from '../functions/routes.ts';

/**
 * The API Gateway REST API resource tree of one service, derived from functions/routes.ts, and the
 * matching API Gateway does on it. CDK (infra/api-stack.ts) creates exactly these resources and
 * methods; the local runtime (infra/local/) matches requests against the same tree, so the two
 * answer every path and method alike.
 *
 * A REST API answers a path with no resource, or a resource without the request's method, with
 * 403 "Missing Authentication Token". So that every request reaches our JSON errors instead:
 * - every resource (the root included) has an `ANY` method served by the `$default` route's
 *   function: it answers 405 with `Allow` where the resource has methods, else 404;
 * - every resource without a path-variable child gets a `{proxy+}` child (API Gateway allows no
 *   greedy variable beside another variable), also served by `$default`, so any deeper path lands
 *   on a resource without relying on API Gateway falling back to a shorter greedy match.
 * Every `GET` also answers `HEAD` (RFC 9110: GET without the body), served by the GET route's own
 * function: a REST API has no implicit HEAD, and drops a proxy response's body for HEAD itself.
 */
export interface ApiResource {
  /** `/`, `/account`, `/v1/wallet/sign/{operation}`, `/account/{proxy+}`. */
  readonly path: string;
  /** The routes of this resource by HTTP method (`GET`, `POST`). */
  readonly methods: ReadonlyMap<string, RouteDefinition>;
}

export interface ResourceTree {
  /** Parents before children (the order CDK must create them in). */
  readonly resources: readonly ApiResource[];
  /** The `$default` route: every resource's `ANY` method. */
  readonly fallback: RouteDefinition;
}

export const GREEDY = '{proxy+}';

/** REST APIs answer 504 when a Lambda integration has not answered within 29 s (the default and the usual maximum). */
export const API_INTEGRATION_TIMEOUT_SECONDS = 29;

/**
 * Each route's function timeout: it ends before the gateway gives up. The gateway's clock also
 * runs through a cold start's init, which the function's timeout does not count: hence 2 s of
 * margin. The local runtime gives handlers the same remaining time.
 */
export const API_FUNCTION_TIMEOUT_SECONDS = 27;

/** The resource tree of one service's routes (exactly one of them `$default`). */
export function resourceTree(routes: readonly RouteDefinition[]): ResourceTree {
  const defaults = routes.filter((route) => route.routeKey === '$default');
  const fallback = defaults[0];
  if (defaults.length !== 1 || !fallback) throw new Error(`expected exactly one $default route, got ${defaults.length}`);
  const methods = new Map<string, Map<string, RouteDefinition>>([['/', new Map()]]);
  for (const route of routes) {
    if (route.routeKey === '$default') continue;
    const { method, path } = parseRouteKey(route.routeKey);
    const segments = path.split('/').slice(1);
    for (let i = 1; i <= segments.length; i++) {
      const prefix = `/${segments.slice(0, i).join('/')}`;
      if (!methods.has(prefix)) methods.set(prefix, new Map());
    }
    const own = methods.get(path);
    if (!own) throw new Error(`route ${route.routeKey}: no resource for ${path}`);
    if (own.has(method)) throw new Error(`duplicate route ${route.routeKey}`);
    own.set(method, route);
  }
  for (const byMethod of methods.values()) {
    const get = byMethod.get('GET');
    if (get && !byMethod.has('HEAD')) byMethod.set('HEAD', get);
  }
  for (const path of [...methods.keys()]) {
    const hasVariableChild = [...methods.keys()].some((other) => parentOf(other) === path && isVariable(lastSegment(other)));
    if (!hasVariableChild) methods.set(`${path === '/' ? '' : path}/${GREEDY}`, new Map());
  }
  const resources = [...methods.entries()]
    .map(([path, byMethod]) => ({ path, methods: byMethod as ReadonlyMap<string, RouteDefinition> }))
    .sort((a, b) => depth(a.path) - depth(b.path) || a.path.localeCompare(b.path));
  return { resources, fallback };
}

/** `'POST /v2/api/wallet'` to its method and path; refuses anything API Gateway would not take. */
export function parseRouteKey(routeKey: string): { method: string; path: string } {
  const match = /^(GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) (\/[^\s?#]*)$/.exec(routeKey);
  if (!match) throw new Error(`Unsupported route key "${routeKey}": expected "METHOD /path" or "$default"`);
  const [, method, path] = match as unknown as [string, string, string];
  if (
    path !== '/' &&
    path
      .split('/')
      .slice(1)
      .some((segment) => !/^([A-Za-z0-9._~-]+|\{[A-Za-z_][A-Za-z0-9_]*\})$/.test(segment))
  ) {
    throw new Error(`Unsupported path "${path}" in "${routeKey}": segments are literals or {name}`);
  }
  return { method, path };
}

export interface ResourceMatch {
  readonly resource: ApiResource;
  /** The route serving the request: the resource's method, else `$default` (its `ANY`). */
  readonly route: RouteDefinition;
  /** URL-decoded path variables, `proxy` for a greedy match; empty when none. */
  readonly pathParameters: Readonly<Record<string, string>>;
}

/**
 * What API Gateway does with a request path: descend the tree a segment at a time, preferring a
 * literal child, then a `{name}` child (one non-empty segment), then `{proxy+}` (the non-empty
 * rest). A path that matches nothing this way (`//x`, `/account/`, `*`) is the root's `{proxy+}`.
 */
export function matchResource(tree: ResourceTree, method: string, path: string): ResourceMatch {
  const { byPath, children } = indexOf(tree);
  const pathParameters: Record<string, string> = {};
  const root = byPath.get('/');
  if (!root) throw new Error('resource tree has no root resource /');
  let current = root;
  let found: ApiResource | undefined = path === '/' ? current : undefined;
  if (path.startsWith('/') && path !== '/') {
    const segments = path.slice(1).split('/');
    for (const [i, segment] of segments.entries()) {
      const options = children.get(current.path) ?? [];
      const literal = options.find((child) => lastSegment(child.path) === segment);
      const variable = segment ? options.find((child) => isVariable(lastSegment(child.path)) && lastSegment(child.path) !== GREEDY) : undefined;
      const greedy = options.find((child) => lastSegment(child.path) === GREEDY);
      const rest = segments.slice(i).join('/');
      if (literal) current = literal;
      else if (variable) {
        current = variable;
        pathParameters[lastSegment(variable.path).slice(1, -1)] = safeDecode(segment);
      } else if (greedy && rest) {
        pathParameters.proxy = safeDecode(rest);
        found = greedy;
        break;
      } else break;
      if (i === segments.length - 1) found = current;
    }
  }
  if (!found) {
    for (const key of Object.keys(pathParameters)) delete pathParameters[key];
    found = byPath.get(`/${GREEDY}`);
    if (!found) throw new Error(`resource tree has no /${GREEDY} resource to answer ${path}`);
    pathParameters.proxy = safeDecode(path.replace(/^\//, ''));
  }
  return { resource: found, route: found.methods.get(method) ?? tree.fallback, pathParameters };
}

/** The methods a resource answers (for `Allow`), sorted; empty for `{proxy+}` and path prefixes. */
export function allowedMethods(resource: ApiResource): string[] {
  return [...resource.methods.keys()].sort();
}

interface TreeIndex {
  readonly byPath: ReadonlyMap<string, ApiResource>;
  readonly children: ReadonlyMap<string, readonly ApiResource[]>;
}

/** Built once per tree (the local runtime matches every request against the same tree). */
const indexes = new WeakMap<ResourceTree, TreeIndex>();

function indexOf(tree: ResourceTree): TreeIndex {
  let index = indexes.get(tree);
  if (!index) {
    const children = new Map<string, ApiResource[]>();
    for (const resource of tree.resources) {
      if (resource.path === '/') continue;
      const parent = parentOf(resource.path);
      children.set(parent, [...(children.get(parent) ?? []), resource]);
    }
    index = { byPath: new Map(tree.resources.map((resource) => [resource.path, resource])), children };
    indexes.set(tree, index);
  }
  return index;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

function lastSegment(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

function isVariable(segment: string): boolean {
  return segment.startsWith('{') && segment.endsWith('}');
}

function depth(path: string): number {
  return path === '/' ? 0 : path.split('/').length - 1;
}

/** A malformed %-escape stays as sent (the handler's validation then refuses it) instead of a 500. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
