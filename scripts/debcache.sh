# Sourced by scripts/shader-toolchain and scripts/install-lavapipe-current.sh:
# fetches packages of newer Debian suites into a cache directory without
# touching the system (no root, no dpkg database), unpacks them there, and
# runs their programs through that suite's own dynamic loader. Debian 12's
# glibc is older than what those binaries need; the suite's loader with the
# suite's libc6 beside them runs them unmodified.
#
#   debcache_init DIR            apt state of our own in DIR/apt (sid, trixie,
#                                trixie-backports; the archive keyring is
#                                Debian's, installed on every Debian machine)
#   debcache_get DIR SPEC...     downloads and unpacks into DIR/root; a SPEC
#                                is PKG[=VER][@SUITE] (sid when no suite is
#                                named): without a version the suite's
#                                newest; a version the archive no longer has
#                                is replaced by the suite's newest, with a
#                                warning, and DIR/moved lists the package
#   debcache_loader DIR          the suite's ld-linux-x86-64.so.2
#   debcache_libpath DIR         its library path, for --library-path

DEBCACHE_MIRROR=${DEBCACHE_MIRROR:-http://deb.debian.org/debian}

debcache_apt() { # DIR apt-command args...
	local dir=$1 cmd=$2
	shift 2
	"$cmd" -q -o Dir::Etc::SourceList="$dir/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/apt/lists" -o Dir::Cache="$dir/apt/cache" \
		-o Dir::State::Status=/dev/null -o APT::Architecture=amd64 -o Debug::NoLocking=1 \
		-o APT::Sandbox::User=root "$@"
}

debcache_init() { # DIR
	local dir=$1 keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	[ -f "$keyring" ] || { echo "debcache: $keyring missing: install the debian-archive-keyring package" >&2; return 1; }
	mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/debs" "$dir/root"
	{
		for suite in sid trixie trixie-backports; do
			echo "deb [signed-by=$keyring] $DEBCACHE_MIRROR $suite main"
		done
	} > "$dir/apt/sources.list"
	# A day-old index is fine: pinned versions are looked up by version.
	if [ -z "$(find "$dir/apt/lists" -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -n 1)" ]; then
		debcache_apt "$dir" apt-get update >&2 || { echo "debcache: apt-get update of sid/trixie failed" >&2; return 1; }
	fi
}

debcache_get() { # DIR PKG=VER[@SUITE]...
	local dir=$1 spec pkg ver suite deb
	shift
	for spec in "$@"; do
		suite=${spec#*@}
		[ "$suite" = "$spec" ] && suite=sid
		spec=${spec%@*}
		pkg=${spec%%=*} ver=${spec#*=}
		[ "$ver" = "$spec" ] && ver=
		deb=$(ls "$dir"/debs/"${pkg}"_*.deb 2>/dev/null | head -n 1 || true)
		if [ -n "$deb" ] && [ -f "$dir/root/.got-$pkg" ]; then continue; fi
		if [ -z "$ver" ]; then
			(cd "$dir/debs" && debcache_apt "$dir" apt-get download "$pkg/$suite" >/dev/null) ||
				{ echo "debcache: cannot download $pkg from $suite" >&2; return 1; }
		elif ! (cd "$dir/debs" && debcache_apt "$dir" apt-get download "$pkg=$ver" >/dev/null 2>&1); then
			echo "debcache: the archive no longer has $pkg $ver; using $suite's newest $pkg instead" >&2
			(cd "$dir/debs" && debcache_apt "$dir" apt-get download "$pkg/$suite" >&2) ||
				{ echo "debcache: cannot download $pkg from $suite" >&2; return 1; }
			echo "$pkg" >> "$dir/moved"
		fi
		deb=$(ls "$dir"/debs/"${pkg}"_*.deb | head -n 1)
		dpkg-deb -x "$deb" "$dir/root"
		dpkg-deb -f "$deb" Version > "$dir/root/.got-$pkg"
	done
}

debcache_loader() { echo "$1/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"; }

debcache_libpath() {
	local r=$1/root
	echo "$r/usr/lib/x86_64-linux-gnu:$r/lib/x86_64-linux-gnu:$r/usr/lib/x86_64-linux-gnu/llvm-19/lib"
}

# debcache_wrap DIR NAME TARGET: DIR/bin/NAME runs TARGET through the loader.
debcache_wrap() {
	local dir=$1 name=$2 target=$3
	mkdir -p "$dir/bin"
	cat > "$dir/bin/$name.tmp" <<EOF
#!/bin/sh
exec "$(debcache_loader "$dir")" --library-path "$(debcache_libpath "$dir")" "$target" "\$@"
EOF
	chmod +x "$dir/bin/$name.tmp"
	mv -f "$dir/bin/$name.tmp" "$dir/bin/$name"
}
