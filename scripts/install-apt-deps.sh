#!/bin/bash
# Installs the Debian packages the tests and the quick start need, only when some are missing.
# Unattended: debconf is preseeded (no dbconfig-common, no RabbitMQ/Keystone registration by
# the OpenStack packages) and runs noninteractive, and conffile questions keep the defaults.
# Daemons are kept from starting during the install by a temporary policy-rc.d (exit 101):
# the keystone/glance/nova/neutron/mariadb/rabbitmq postinsts would otherwise start them from
# init scripts on all interfaces. The file is removed afterwards unless it was there before.
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  own_policy=1
fi
trap '[ "$own_policy" = 1 ] && $SUDO rm -f "$policy"' EXIT
# These are the packages' defaults already; answering them up front keeps it that way.
$SUDO debconf-set-selections <<'EOF'
keystone keystone/configure_db boolean false
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
glance-common glance/configure_db boolean false
glance-common glance/configure_rabbit boolean false
glance-common glance/configure_ksat boolean false
glance-api glance/configure_api-endpoint boolean false
nova-common nova/configure_db boolean false
nova-common nova/configure_rabbit boolean false
nova-common nova/configure_ksat boolean false
nova-common nova/configure_neutron boolean false
nova-common nova/configure_placement boolean false
nova-api novaapi/configure_db boolean false
nova-api nova/configure_api-endpoint boolean false
placement-common placement/configure_db boolean false
placement-common placement/configure_ksat boolean false
placement-api placement/configure_api-endpoint boolean false
neutron-common neutron/configure_db boolean false
neutron-common neutron/configure_rabbit boolean false
neutron-common neutron/configure_ksat boolean false
neutron-common neutron/configure_nova boolean false
neutron-api neutron/configure_api-endpoint boolean false
EOF
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q \
  || $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -q
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=600 \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold --no-install-recommends "${missing[@]}"
