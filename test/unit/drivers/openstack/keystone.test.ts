import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CloudCredentials } from '../../../../lib/drivers/openstack/clouds-yaml.js';
import { authRequestBody, errorMessage, selectEndpoint, tokensUrl, type CatalogService } from '../../../../lib/drivers/openstack/keystone.js';
import { errorSaid } from '../../../../lib/drivers/openstack/http-client.js';
import { CloudError } from '../../../../lib/errors.js';
import { SecretRegistry } from '../../../../lib/redact.js';

const CATALOG: CatalogService[] = [
  { type: 'identity', endpoints: [{ interface: 'public', region_id: 'RegionOne', url: 'http://k:5000/v3/' }] },
  {
    type: 'image',
    name: 'glance',
    endpoints: [
      { interface: 'internal', region_id: 'RegionOne', url: 'http://glance-int:9292' },
      { interface: 'public', region_id: 'RegionOne', url: 'http://glance-1:9292/' },
      { interface: 'public', region: 'RegionTwo', url: 'https://glance-2.example.com/image' },
    ],
  },
];

const creds: CloudCredentials = {
  cloudName: 'c', authUrl: 'http://k:5000/v3', username: 'u', password: 'p', userDomainName: 'Default',
  projectDomainName: 'Default', interface: 'public', identityApiVersion: '3', verify: true,
};

describe('catalog endpoint selection', () => {
  it('picks the endpoint of the type, interface and region, without a trailing slash', () => {
    assert.equal(selectEndpoint(CATALOG, { type: 'image', interface: 'public', region: 'RegionOne' }), 'http://glance-1:9292');
    assert.equal(selectEndpoint(CATALOG, { type: 'image', interface: 'internal', region: 'RegionOne' }), 'http://glance-int:9292');
  });

  it('matches the legacy region field as well as region_id', () => {
    assert.equal(selectEndpoint(CATALOG, { type: 'image', interface: 'public', region: 'RegionTwo' }), 'https://glance-2.example.com/image');
  });

  it('takes the first endpoint of the interface when no region is configured', () => {
    assert.equal(selectEndpoint(CATALOG, { type: 'image', interface: 'public' }), 'http://glance-1:9292');
  });

  it('says what the catalog has when nothing matches', () => {
    assert.throws(() => selectEndpoint(CATALOG, { type: 'image', interface: 'admin', region: 'RegionOne' }), (err: unknown) => {
      assert.ok(err instanceof CloudError);
      assert.equal(err.message, 'no image endpoint with interface admin in region RegionOne in the service catalog '
        + '(it has internal@RegionOne, public@RegionOne, public@RegionTwo)');
      return true;
    });
    assert.throws(() => selectEndpoint(CATALOG, { type: 'compute', interface: 'public' }),
      /no compute endpoint with interface public in the service catalog \(types present: identity, image\)/);
  });
});

describe('Keystone request building', () => {
  it('finds /v3/auth/tokens whether or not the auth URL has /v3', () => {
    assert.equal(tokensUrl('http://k:5000/v3'), 'http://k:5000/v3/auth/tokens');
    assert.equal(tokensUrl('http://k:5000/v3/'), 'http://k:5000/v3/auth/tokens');
    assert.equal(tokensUrl('https://k/identity'), 'https://k/identity/v3/auth/tokens');
    assert.equal(tokensUrl('http://k:5000/'), 'http://k:5000/v3/auth/tokens');
  });

  it('scopes to a project by name within its domain', () => {
    assert.deepEqual(authRequestBody({ ...creds, projectName: 'ci', projectDomainName: 'Projects' }), {
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'u', domain: { name: 'Default' }, password: 'p' } } },
        scope: { project: { name: 'ci', domain: { name: 'Projects' } } },
      },
    });
  });

  it('prefers ids for project, project domain and user domain', () => {
    const body = authRequestBody({ ...creds, projectName: 'ci', projectDomainId: 'pd', userDomainId: 'ud' }) as {
      auth: { identity: { password: { user: { domain: unknown } } }; scope: unknown };
    };
    assert.deepEqual(body.auth.identity.password.user.domain, { id: 'ud' });
    assert.deepEqual(body.auth.scope, { project: { name: 'ci', domain: { id: 'pd' } } });
    assert.deepEqual((authRequestBody({ ...creds, projectId: 'p1', projectName: 'ignored' }) as { auth: { scope: unknown } }).auth.scope,
      { project: { id: 'p1' } });
  });

  it('scopes to a domain when no project is given', () => {
    assert.deepEqual((authRequestBody({ ...creds, domainName: 'Example' }) as { auth: { scope: unknown } }).auth.scope, { domain: { name: 'Example' } });
    assert.deepEqual((authRequestBody({ ...creds, domainId: 'd1' }) as { auth: { scope: unknown } }).auth.scope, { domain: { id: 'd1' } });
  });
});

describe('error messages from OpenStack services', () => {
  it('reads Keystone JSON errors', () => {
    assert.equal(errorMessage('{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}'),
      'The request you have made requires authentication.');
  });

  it('reads Nova-style nested JSON errors', () => {
    assert.equal(errorMessage('{"itemNotFound": {"code": 404, "message": "Image not found."}}'), 'Image not found.');
  });

  it('keeps only the first paragraph of a Glance HTML error', () => {
    const html = `<html>
 <head>
  <title>400 Bad Request</title>
 </head>
 <body>
  <h1>400 Bad Request</h1>
  Provided object does not match schema 'image': 'bogus' is not one of [None, 'raw', 'qcow2']

Failed validating 'enum' in schema['properties']['disk_format']:
    {'description': 'Format of the disk'}<br /><br />



 </body>
</html>`;
    assert.equal(errorMessage(html), "Provided object does not match schema 'image': 'bogus' is not one of [None, 'raw', 'qcow2']");
  });

  it('keeps only the first line of a Glance JSON error', () => {
    const body = JSON.stringify({ message: "Provided object does not match schema 'image': 'bogus' is not one of [None]\n\nFailed validating 'enum'\n    {}<br /><br />\n\n\n", code: '400 Bad Request', title: 'Bad Request' });
    assert.equal(errorMessage(body), "Provided object does not match schema 'image': 'bogus' is not one of [None]");
  });

  it('keeps only the message of a Glance text/plain error', () => {
    const text = "400 Bad Request\n\nProvided object does not match schema 'image': 'bogus' is not one of [None, 'raw']  "
      + "Failed validating 'enum' in schema['properties']['disk_format']:     {'description': 'Format of the disk'}\n\n   ";
    assert.equal(errorMessage(text), "Provided object does not match schema 'image': 'bogus' is not one of [None, 'raw']");
    assert.equal(errorMessage('404 Not Found\n\nNo image found with ID abc\n\n   '), 'No image found with ID abc');
  });

  it('never quotes a secret a Keystone or proxy echoes back: secret keys, known secrets, key/value pairs', () => {
    const secrets = new SecretRegistry();
    secrets.add('Echo-Pass-31');
    const request = { auth: { identity: { methods: ['password'], password: { user: { name: 'u', password: 'Echo-Pass-31' } } } } };
    const bodies = [
      JSON.stringify({ error: { code: 400, message: `Invalid request: ${JSON.stringify(request)}` } }),
      JSON.stringify({ error: { code: 400, title: 'Bad Request' }, request }),
      `400 Bad Request\n\nrequest was ${JSON.stringify(request)}`,
      `<html><body><h1>Proxy error</h1><pre>POST /v3/auth/tokens password=Echo-Pass-31</pre></body></html>`,
    ];
    const said = bodies.map((body) => errorSaid(body, secrets));
    for (const s of said) assert.ok(!s.includes('Echo-Pass-31'), s);
    assert.deepEqual(said.map((s) => s.includes('<redacted>')), [true, false, true, false], said.join('\n'));
    assert.equal(said[1], 'cloud said: Bad Request');
    assert.equal(said[3], 'cloud said: Proxy error');
    const unknown = errorMessage('{"message": "echo: {\\"password\\": \\"Not-Known-1\\"}"}', new SecretRegistry());
    assert.ok(!unknown.includes('Not-Known-1'), unknown);
  });

  it('passes plain text through and shortens very long bodies', () => {
    assert.equal(errorMessage('  Service Unavailable \n'), 'Service Unavailable');
    assert.equal(errorMessage('x'.repeat(600)).length, 501);
  });
});
