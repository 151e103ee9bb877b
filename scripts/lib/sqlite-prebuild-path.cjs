// Prints where better-sqlite3's install step (prebuild-install) looks for a cached prebuilt binary of the installed
// version on this machine (npm's cache, _prebuilds), computed by prebuild-install's own code so the name is the one
// it will look for. Used by deps.sh (cache_sqlite_build); run from the repository's root.
const pkg = require('../../node_modules/better-sqlite3/package.json')
const rc = require('../../node_modules/prebuild-install/rc')(pkg)
const util = require('../../node_modules/prebuild-install/util')

console.log(util.cachedPrebuild(util.getDownloadUrl({ ...rc, pkg })))
