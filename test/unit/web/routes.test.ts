/** matchRoute (server/web/routes.ts): literal and `:name` segments, decoding, methods, HEAD as GET. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchRoute, type Route } from '../../../server/web/routes.js';

const answer = async (): Promise<never> => { throw new Error('not called'); };
const routes: Route[] = [
  { method: 'POST', pattern: '/api/image/:diskimage/build', handle: answer },
  { method: 'DELETE', pattern: '/api/build/:build', handle: answer },
  { method: 'GET', pattern: '/api/build/:build/log', handle: answer },
  { method: 'POST', pattern: '/api/build/:build/revoke', handle: answer },
];

void describe('matchRoute', () => {
  void it('matches literal segments and gives :name segments decoded', () => {
    const m = matchRoute(routes, 'POST', '/api/image/ubuntu%2Djammy/build');
    assert.ok(m && 'route' in m);
    assert.equal(m.route.pattern, '/api/image/:diskimage/build');
    assert.deepEqual(m.params, { diskimage: 'ubuntu-jammy' });
  });

  void it('answers HEAD with the GET route', () => {
    const m = matchRoute(routes, 'HEAD', '/api/build/0000000001/log');
    assert.ok(m && 'route' in m);
    assert.equal(m.route.method, 'GET');
  });

  void it('says which methods a known path allows', () => {
    assert.deepEqual(matchRoute(routes, 'GET', '/api/image/deb/build'), { allowed: ['POST'] });
    assert.deepEqual(matchRoute(routes, 'PUT', '/api/build/0000000001'), { allowed: ['DELETE'] });
  });

  void it('matches nothing for other paths, lengths, empty or undecodable segments', () => {
    assert.equal(matchRoute(routes, 'GET', '/api/image/deb'), undefined);
    assert.equal(matchRoute(routes, 'POST', '/api/image/deb/build/now'), undefined);
    assert.equal(matchRoute(routes, 'POST', '/api/image/%E0%A4%A/build'), undefined);
    assert.equal(matchRoute(routes, 'GET', '/image-list'), undefined);
    assert.equal(matchRoute([], 'GET', '/'), undefined);
  });
});
