import { describe, expect, it } from 'vitest';
import { ROUTES, type RouteDefinition, type ServiceName } from '../../functions/routes.ts';
import { allowedMethods, matchResource, parseRouteKey, resourceTree } from '../../infra/api-resources.ts';

const route = (routeKey: string, id = routeKey): RouteDefinition => ({ id, service: 'account', routeKey, entry: 'x.ts', needs: {} });
const tree = resourceTree(
  [
    'GET /health',
    'GET /task/{task_id}',
    'POST /task/{task_id}/resume',
    'POST /task',
    'GET /v2/api/wallet/{wallet_id}/key/{key_id}',
    'GET /.well-known/jwks.json',
    '$default',
  ].map((key) => route(key)),
);
const match = (method: string, path: string) => {
  const found = matchResource(tree, method, path);
  return { resource: found.resource.path, route: found.route.routeKey, params: found.pathParameters };
};

describe('resourceTree', () => {
  it('has every path prefix, a {proxy+} under each resource without a variable child, and the routes as methods', () => {
    const paths = tree.resources.map((resource) => resource.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/',
        '/{proxy+}',
        '/health',
        '/health/{proxy+}',
        '/task',
        '/task/{task_id}',
        '/task/{task_id}/resume',
        '/v2',
        '/v2/api/wallet/{wallet_id}/key',
      ]),
    );
    // /task has the variable child {task_id}: API Gateway allows no {proxy+} beside it.
    expect(paths).not.toContain('/task/{proxy+}');
    expect(paths).toContain('/task/{task_id}/{proxy+}');
    expect(allowedMethods(tree.resources.find((r) => r.path === '/task')!)).toEqual(['POST']);
    // Parents come before children (CDK creates them in this order).
    paths.forEach((path, i) => {
      const parent = path.slice(0, path.lastIndexOf('/')) || '/';
      if (path !== '/') expect(paths.indexOf(parent)).toBeLessThan(i);
    });
  });

  it('refuses route keys API Gateway would not take, duplicates, and a missing or second $default', () => {
    expect(() => parseRouteKey('FETCH /x')).toThrow(/Unsupported route key/);
    expect(() => parseRouteKey('GET x')).toThrow(/Unsupported route key/);
    expect(() => parseRouteKey('GET /a b')).toThrow(/Unsupported route key/);
    expect(() => parseRouteKey('GET /a/{b+}')).toThrow(/Unsupported path/);
    expect(() => parseRouteKey('GET /a//b')).toThrow(/Unsupported path/);
    expect(() => resourceTree([route('GET /a'), route('GET /a', 'again'), route('$default')])).toThrow(/duplicate route GET \/a/);
    expect(() => resourceTree([route('GET /a')])).toThrow(/exactly one \$default/);
    expect(() => resourceTree([route('$default'), route('$default', 'two')])).toThrow(/exactly one \$default/);
  });

  it.each(['account', 'enclave', 'express'] satisfies ServiceName[])('builds for the %s service of functions/routes.ts', (service) => {
    const built = resourceTree(ROUTES.filter((r) => r.service === service));
    for (const r of ROUTES.filter((x) => x.service === service && x.routeKey !== '$default')) {
      const { method, path } = parseRouteKey(r.routeKey);
      expect(built.resources.find((resource) => resource.path === path)?.methods.get(method)?.id).toBe(r.id);
    }
  });
});

describe('matchResource (what API Gateway does with a request path)', () => {
  it('matches literals and path variables, URL-decoded', () => {
    expect(match('GET', '/health')).toEqual({ resource: '/health', route: 'GET /health', params: {} });
    expect(match('GET', '/task/0190c1a2-task')).toEqual({ resource: '/task/{task_id}', route: 'GET /task/{task_id}', params: { task_id: '0190c1a2-task' } });
    expect(match('POST', '/task/t1/resume')).toMatchObject({ route: 'POST /task/{task_id}/resume', params: { task_id: 't1' } });
    expect(match('GET', '/v2/api/wallet/w%201/key/k%2F2')).toMatchObject({ params: { wallet_id: 'w 1', key_id: 'k/2' } });
    expect(match('GET', '/task/%E0%A4%A')).toMatchObject({ params: { task_id: '%E0%A4%A' } });
  });

  it('treats regex metacharacters literally', () => {
    expect(match('GET', '/.well-known/jwks.json').route).toBe('GET /.well-known/jwks.json');
    expect(match('GET', '/.well-known/jwksXjson').route).toBe('$default');
  });

  it('sends another method on a known resource to $default on that resource (405 there)', () => {
    expect(match('DELETE', '/task/abc')).toEqual({ resource: '/task/{task_id}', route: '$default', params: { task_id: 'abc' } });
    expect(match('GET', '/task')).toMatchObject({ resource: '/task', route: '$default' });
    expect(match('HEAD', '/task')).toMatchObject({ resource: '/task', route: '$default' });
  });

  it('answers HEAD wherever GET is, with the GET route (and only there)', () => {
    expect(match('HEAD', '/health')).toEqual({ resource: '/health', route: 'GET /health', params: {} });
    expect(match('HEAD', '/task/t1')).toEqual({ resource: '/task/{task_id}', route: 'GET /task/{task_id}', params: { task_id: 't1' } });
    expect(match('HEAD', '/task/t1/resume')).toMatchObject({ route: '$default' });
    expect(allowedMethods(tree.resources.find((r) => r.path === '/health')!)).toEqual(['GET', 'HEAD']);
    expect(allowedMethods(tree.resources.find((r) => r.path === '/task/{task_id}/resume')!)).toEqual(['POST']);
    for (const resource of tree.resources) {
      expect(resource.methods.has('HEAD'), resource.path).toBe(resource.methods.has('GET'));
      if (resource.methods.has('HEAD')) expect(resource.methods.get('HEAD')).toBe(resource.methods.get('GET'));
    }
  });

  it('keeps a route of its own for HEAD where one is declared', () => {
    const own = resourceTree([route('GET /file'), route('HEAD /file', 'HeadFile'), route('$default')]);
    expect(matchResource(own, 'HEAD', '/file').route.id).toBe('HeadFile');
  });

  it('sends unknown paths to a {proxy+} resource served by $default (404 there)', () => {
    expect(match('GET', '/health/extra')).toEqual({ resource: '/health/{proxy+}', route: '$default', params: { proxy: 'extra' } });
    expect(match('GET', '/task/abc/extra/more')).toEqual({
      resource: '/task/{task_id}/{proxy+}',
      route: '$default',
      params: { task_id: 'abc', proxy: 'extra/more' },
    });
    expect(match('GET', '/healthz')).toEqual({ resource: '/{proxy+}', route: '$default', params: { proxy: 'healthz' } });
    expect(match('GET', '/v2')).toEqual({ resource: '/v2', route: '$default', params: {} });
    expect(match('GET', '/')).toEqual({ resource: '/', route: '$default', params: {} });
  });

  it.each(['//x/health', '//health', '/health/', '/x/../health', '/./health', '//', '*', '/task/'])('%s is not a route (paths are matched as sent)', (path) => {
    const found = match('GET', path);
    expect(found.route).toBe('$default');
    expect(found.resource).toBe('/{proxy+}');
  });
});
