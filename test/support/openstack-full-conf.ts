/**
 * Pure config writers of the full loopback cloud: placement.conf, nova.conf (+ the API DB
 * file only api/conductor/scheduler/nova-manage get: nova-compute must not see
 * `[api_database]`, reference §4.12), neutron.conf, and the nova-api and nova-compute
 * wrappers (one process for the API; the nova-compute package would pull in qemu and
 * libvirt, §4.11).
 *
 * Every service authenticates as `admin` in project `admin`, as Glance does: service users
 * would cost more Keystone calls at start and buy nothing in a test cloud.
 */

/** What the config writers need to know about the cloud. */
export interface FullCloudLayout {
  /** State directory. */
  dir: string;
  keystoneUrl: string;
  adminPassword: string;
  region: string;
  transportUrl: string;
  /** SQLAlchemy URL of a database by name. */
  dbUrl(name: string): string;
  placementPort: number;
  novaPort: number;
  neutronPort: number;
}

function auth(l: FullCloudLayout, withUri = true): string {
  return `auth_url = ${l.keystoneUrl}
${withUri ? `www_authenticate_uri = ${l.keystoneUrl}\n` : ''}auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = admin
username = admin
password = ${l.adminPassword}
region_name = ${l.region}
`;
}

/** placement.conf (uwsgi reads it from OS_PLACEMENT_CONFIG_DIR). */
export function placementConf(l: FullCloudLayout): string {
  return `[DEFAULT]
log_dir = ${l.dir}/log
log_file = placement.log
[api]
auth_strategy = keystone
[keystone_authtoken]
${auth(l)}[placement_database]
connection = ${l.dbUrl('placement')}
[oslo_policy]
policy_dirs = /etc/placement/policy.d
`;
}

/** nova.conf, shared by all Nova services. */
export function novaConf(l: FullCloudLayout): string {
  return `[DEFAULT]
transport_url = ${l.transportUrl}
compute_driver = fake.FakeDriver
host = loopback
my_ip = 127.0.0.1
state_path = ${l.dir}/nova/state
log_dir = ${l.dir}/log
enabled_apis = osapi_compute
osapi_compute_listen = 127.0.0.1
osapi_compute_listen_port = ${l.novaPort}
osapi_compute_workers = 1
metadata_listen = 127.0.0.1
# oslo.service waits 60 s for in-flight work on SIGTERM by default; a test cloud need not.
graceful_shutdown_timeout = 5
# Idle CPU: services report every 30 s instead of 10 (a host is down after 180 s unheard
# instead of 60); Neutron's network-changed events keep the network info cache current,
# so its periodic heal (one server a minute, seven Neutron calls each) is off; the
# resource tracker is updated by every boot and delete, so its audit runs every 10 min.
report_interval = 30
service_down_time = 180
heal_instance_info_cache_interval = 0
update_resources_interval = 600
[api]
auth_strategy = keystone
[wsgi]
api_paste_config = /etc/nova/api-paste.ini
[database]
connection = ${l.dbUrl('nova')}
[conductor]
workers = 1
[scheduler]
workers = 1
[keystone_authtoken]
${auth(l)}[placement]
${auth(l, false)}[neutron]
${auth(l, false)}[glance]
region_name = ${l.region}
[cinder]
os_region_name = ${l.region}
[oslo_concurrency]
lock_path = ${l.dir}/nova/lock
[vnc]
enabled = false
[oslo_messaging_notifications]
driver = noop
`;
}

/** The `[api_database]` file for nova-api, -conductor, -scheduler and nova-manage only. */
export function novaApiDbConf(l: FullCloudLayout): string {
  return `[api_database]\nconnection = ${l.dbUrl('nova_api')}\n`;
}

/** neutron.conf: ML2 with the agentless `loopback` mechanism driver, flat/vlan/vxlan, routers. */
export function neutronConf(l: FullCloudLayout): string {
  return `[DEFAULT]
bind_host = 127.0.0.1
bind_port = ${l.neutronPort}
api_workers = 1
rpc_workers = 1
rpc_state_report_workers = 0
core_plugin = ml2
service_plugins = router
auth_strategy = keystone
transport_url = ${l.transportUrl}
# Nova's fake driver waits for no network-vif-plugged event ("unexpected event"): not sent.
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = true
dhcp_agent_notification = false
graceful_shutdown_timeout = 5
state_path = ${l.dir}/neutron/state
log_dir = ${l.dir}/log
log_file = neutron.log
api_paste_config = /etc/neutron/api-paste.ini
[database]
connection = ${l.dbUrl('neutron')}
[keystone_authtoken]
${auth(l)}[nova]
${auth(l, false)}[oslo_concurrency]
lock_path = ${l.dir}/neutron/lock
[oslo_messaging_notifications]
driver = noop
[ml2]
type_drivers = flat,vlan,vxlan
tenant_network_types = vxlan
mechanism_drivers = loopback
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
[ml2_type_vxlan]
vni_ranges = 1:1000
[securitygroup]
enable_security_group = true
`;
}

/**
 * The nova-api program, in one process: python3-nova's launcher forks the API into a
 * worker and meanwhile polls waitpid() every 10 ms (about 1 CPU-s a minute when idle).
 * Its server views leave out `security_groups`: Nova asks Neutron for them on every
 * GET /servers/<id> and /servers/detail (a port list and a security-group list each, about half
 * of Neutron's requests and CPU in a test run, where launchers poll servers), and neither the
 * product nor a test reads them (the product sends a pool's `security-groups` at create, which
 * Nova still applies). /servers/<id>/os-security-groups still asks Neutron.
 */
export const NOVA_API_WRAPPER = `#!/usr/bin/python3
import sys
from nova.cmd import api
from nova import service
from nova.network import security_group_api
from oslo_service import service as oslo_service
service.process_launcher = lambda: oslo_service.ServiceLauncher(service.CONF, restart_method='mutate')
security_group_api.get_instances_security_groups_bindings = lambda context, servers, detailed=False: {}
sys.exit(api.main())
`;

/** The nova-compute program: python3-nova's entry point (its file name becomes the process name). */
export const NOVA_COMPUTE_WRAPPER = `#!/usr/bin/python3
# The nova-compute package would pull in qemu and libvirt; the fake driver needs neither.
import sys
from nova.cmd.compute import main
sys.exit(main())
`;
