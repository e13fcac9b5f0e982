# Which PostgreSQL snowflake is built and tested against. Sourced by the other
# scripts, not run; sets and exports PG_MAJOR, PG_CONFIG and PG_BIN.
#
#   PG_CONFIG=/usr/lib/postgresql/NN/bin/pg_config   that PostgreSQL
#   PG_MAJOR=NN                                      Debian's postgresql-NN
#   neither                                          the major of this Debian
#                                                    release (README, "Supported
#                                                    PostgreSQL"); on a release
#                                                    the scripts do not name
#                                                    (Ubuntu, a Debian derivative,
#                                                    a newer Debian), the one
#                                                    major installed, if one is
#
# Debian installs each major under /usr/lib/postgresql/NN, side by side; the
# pg_config on the PATH (/usr/bin) may belong to another one, so the scripts
# never rely on it. scripts/install.sh, for a machine that runs PostgreSQL
# already, chooses by the clusters instead (postgresql_clusters below).

# The supported majors: the floor is 15 (README, "Supported PostgreSQL").
POSTGRESQL_SUPPORTED_MAJORS="15 16 17 18 19"

# The majors whose server is installed the Debian way (Debian's and Ubuntu's
# packages, and PostgreSQL's own apt repository, which packages alike), one
# a line, in order.
postgresql_installed_majors() {
    local postgres
    for postgres in /usr/lib/postgresql/*/bin/postgres; do
        [ -x "$postgres" ] || continue
        postgres=${postgres#/usr/lib/postgresql/}
        echo "${postgres%%/*}"
    done | sort -n
}

# The clusters of postgresql-common (Debian, Ubuntu), one a line:
# "MAJOR NAME PORT STATUS OWNER DATA_DIRECTORY"; nothing where it is absent.
postgresql_clusters() {
    command -v pg_lsclusters >/dev/null || return 0
    pg_lsclusters --no-header 2>/dev/null | awk '{print $1, $2, $3, $4, $5, $6}'
}

# What to install where no PostgreSQL is: the major this machine's apt
# sources make the default (the `postgresql` package's), whatever the
# release is called.
postgresql_what_to_install() {
    local major
    major=$(apt-cache depends postgresql 2>/dev/null | sed -n 's/^ *Depends: postgresql-\([0-9][0-9]*\)$/\1/p' | sed -n 1p)
    if [ -n "$major" ] && [[ " $POSTGRESQL_SUPPORTED_MAJORS " == *" $major "* ]]; then
        echo "  apt-get install postgresql-$major postgresql-server-dev-$major" >&2
        echo "(PostgreSQL $major, this machine's apt sources' default), or another major from 15 on from" >&2
    elif [ -n "$major" ]; then
        echo "This machine's apt sources make PostgreSQL $major the default, which snowflake does not support" >&2
        echo "(15 or later). Install PostgreSQL 15 or later, for example from" >&2
    else
        echo "Install PostgreSQL 15 or later (the server and its headers, postgresql-NN and" >&2
        echo "postgresql-server-dev-NN), for example from" >&2
    fi
    echo "PostgreSQL's own apt repository (https://wiki.postgresql.org/wiki/Apt), then run this again." >&2
}

# The major each Debian release serves: bookworm 15, trixie 17, forky and sid 18
# (and 19 from Debian's experimental archive on forky and sid, with PG_MAJOR=19).
postgresql_major_of_release() {
    local codename=
    [ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    case $codename in
        bookworm) echo 15 ;;
        trixie) echo 17 ;;
        forky | sid) echo 18 ;;
        *) postgresql_major_installed "$codename" ;;
    esac
}

# On a release the scripts do not name: the one major installed; with none or
# several, says what to do.
postgresql_major_installed() {
    local codename=$1 majors
    majors=$(postgresql_installed_majors | xargs)
    case $majors in
        '')
            echo "This release (${codename:-unknown}) is not one snowflake's scripts name, and no PostgreSQL is" >&2
            echo "installed. Install one, for example:" >&2
            postgresql_what_to_install
            return 1
            ;;
        *' '*)
            echo "This release (${codename:-unknown}) is not one snowflake's scripts name, and several PostgreSQL" >&2
            echo "majors are installed ($majors): choose one with PG_MAJOR=NN or" >&2
            echo "PG_CONFIG=/usr/lib/postgresql/NN/bin/pg_config." >&2
            return 1
            ;;
        *)
            echo "This release (${codename:-unknown}) is not one snowflake's scripts name: using PostgreSQL $majors," >&2
            echo "the one installed (/usr/lib/postgresql/$majors)." >&2
            echo "$majors"
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

# scripts/install.sh makes its own choice, by the clusters: it takes the
# functions above only.
[ -z "${POSTGRESQL_FUNCTIONS_ONLY:-}" ] || return 0

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
