#!/usr/bin/env bash
# The sans-I/O engines' headers stand alone and pull in no connection, pool or script (issue 39
# item 3: their value types live apart from the classes that do I/O), so an engine test needs
# no server and an engine's decisions cannot reach a socket. Each header is compiled by itself
# (-fsyntax-only) and the headers it includes are listed (-H).
#   engine_headers.sh CXX SOURCE_DIR
set -euo pipefail
cxx=$1 src=$2
inc=()
for part in core lock election signaling queue jobs limit; do inc+=("-I$src/$part/include"); done
status=0
for h in lock/src/lock_engine.hpp lock/src/fair_engine.hpp election/src/elector_engine.hpp \
         election/src/round.hpp limit/src/semaphore_engine.hpp limit/src/rw_engine.hpp \
         jobs/src/worker_engine.hpp; do
  part=${h%%/*}
  if ! out=$(echo "#include \"$src/$h\"" |
             "$cxx" -std=c++20 -x c++ -fsyntax-only -H "-I$src/$part/src" "${inc[@]}" - 2>&1); then
    echo "$h does not compile by itself:"; echo "$out" | grep -v '^\.' | head -20
    status=1
    continue
  fi
  io=$(echo "$out" | grep -E '^\.+ .*redcoord/core/(pool|connection|script)\.hpp$' || true)
  if [ -n "$io" ]; then
    echo "$h pulls in I/O headers (the chain, outermost first):"
    echo "$out" | grep -E '^\.+ ' | grep -v '^\.+ /usr/' | head -12
    status=1
  else
    echo "$h: ok"
  fi
done
exit $status
