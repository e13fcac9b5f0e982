# Which PostgreSQL snowflake is built and tested against. Sourced by the other
# scripts, not run; sets and exports PG_MAJOR, PG_CONFIG and PG_BIN.
#
#   PG_CONFIG=/usr/lib/postgresql/NN/bin/pg_config   that PostgreSQL
#   PG_MAJOR=NN                                      Debian's postgresql-NN
#   neither                                          the major of this Debian
#                                                    release (README, "Supported
#                                                    PostgreSQL")
#
# Debian installs each major under /usr/lib/postgresql/NN, side by side; the
# pg_config on the PATH (/usr/bin) may belong to another one, so the scripts
# never rely on it.

# The major each Debian release serves: bookworm 15, trixie 17, forky and sid 18
# (and 19 from Debian's experimental archive on forky and sid, with PG_MAJOR=19).
postgresql_major_of_release() {
    local codename=
    [ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    case $codename in
        bookworm) echo 15 ;;
        trixie) echo 17 ;;
        forky | sid) echo 18 ;;
        *)
            echo "This Debian release (${codename:-unknown}) has no PostgreSQL major known to snowflake's" >&2
            echo "scripts: set PG_MAJOR=NN (15, 17, 18 or 19) or PG_CONFIG=/path/to/pg_config." >&2
            return 1
            ;;
    esac
}

# The supported major before PG_MAJOR and the Debian release that serves it
# ("15 bookworm"), which scripts/test.sh upgrade upgrades from; fails for 15,
# the floor. 19 follows 18 of the release it runs on (forky or sid).
postgresql_previous_major() {
    case $PG_MAJOR in
        17) echo "15 bookworm" ;;
        18) echo "17 trixie" ;;
        19) echo "18 $(. /etc/os-release && echo "${VERSION_CODENAME:-sid}")" ;;
        *) return 1 ;;
    esac
}

if [ -n "${PG_CONFIG:-}" ] && [ "$PG_CONFIG" != pg_config ]; then
    if [ -x "$PG_CONFIG" ]; then
        PG_MAJOR=$("$PG_CONFIG" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p')
    elif [[ $PG_CONFIG =~ ^/usr/lib/postgresql/([0-9]+)/bin/pg_config$ ]]; then
        PG_MAJOR=${BASH_REMATCH[1]}  # installed by install-deps.sh
    else
        echo "PG_CONFIG=$PG_CONFIG is not an executable pg_config" >&2
        return 1
    fi
else
    PG_MAJOR=${PG_MAJOR:-$(postgresql_major_of_release)} || return 1
    PG_CONFIG=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
fi
PG_BIN=$(dirname "$PG_CONFIG")
export PG_MAJOR PG_CONFIG PG_BIN
