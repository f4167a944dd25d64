"""ML2 mechanism driver for the agentless loopback test cloud (test/support/openstack-full.ts).

No Neutron agent runs there, so no stock driver would bind a port and every server port
would end up ``binding_failed``. This driver binds each port on any host to the first
segment it is offered (``vif_type=ovs``, no port filter) and reports it ACTIVE, which is
all Nova's fake virt driver needs. It is found by stevedore through the entry point in
``loopback_mech-0.1.dist-info``: neutron-server runs with this directory on PYTHONPATH,
so the system Python is never touched.
"""
from neutron_lib import constants
from neutron_lib.api.definitions import portbindings
from neutron_lib.plugins.ml2 import api


class LoopbackMechanismDriver(api.MechanismDriver):
    """Binds every port, on any host, to its first segment."""

    def initialize(self):
        pass

    @property
    def connectivity(self):
        return portbindings.CONNECTIVITY_L2

    def bind_port(self, context):
        for segment in context.segments_to_bind:
            context.set_binding(segment[api.ID], portbindings.VIF_TYPE_OVS,
                                {portbindings.CAP_PORT_FILTER: False},
                                status=constants.PORT_STATUS_ACTIVE)
            return
