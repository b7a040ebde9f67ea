#!/usr/bin/env bash
# An example external runtime implementing butler's adapter contract (spec 002):
#   file_agent.sh spawn BRIEF_FILE STATE_FILE PROMPT_FILE   -> prints a session id
#   file_agent.sh resume SESSION_ID STATE_FILE PROMPT_FILE  -> prints a message
#   file_agent.sh check_status SESSION_ID              -> pending|active|completed|failed
# Its "agent" reads the brief and reports a word count in the state file. Text
# from the brief or the prompt is only ever written to files, never evaluated.
# butler passes the prompt as a file (0600), never as text in argv.
set -euo pipefail

root="${FILE_AGENT_HOME:-${HOME:-/tmp}/.file-agent}"
sessions="$root/sessions"

set_status() {  # atomically, so check_status never reads half a word
  printf '%s\n' "$2" > "$1/status.tmp" && mv "$1/status.tmp" "$1/status"
}

session_dir() {
  [[ "$1" =~ ^session_[0-9_]+$ ]] || { echo "file_agent: invalid session id: $1" >&2; exit 1; }
  printf '%s/%s' "$sessions" "$1"
}

work() {  # the agent itself, detached: $1 session folder, $2 state file
  local dir="$1" state="$2" words runs status=completed
  sleep "${FILE_AGENT_DELAY:-0}"
  # An orchestrator (or a test) may hold the agent until a gate file appears.
  while [ -n "${FILE_AGENT_GATE:-}" ] && [ ! -e "$FILE_AGENT_GATE" ]; do sleep 0.1; done
  words=$(wc -w < "$dir/brief.md")
  runs=$(wc -l < "$dir/prompts")
  if grep -q "FAIL" "$dir/prompts"; then status=failed; fi
  printf '{"status": "%s", "output": "read the brief: %d words, prompt %d", "runs": %d}\n' \
    "$status" "$words" "$runs" "$runs" > "$state.tmp"
  mv "$state.tmp" "$state"
  set_status "$dir" "$status"
}

start_work() {
  set_status "$1" active
  # Detached from our stdout, so the caller sees this command end at once.
  work "$1" "$2" > "$1/adapter.log" 2>&1 < /dev/null &
}

case "${1:-}" in
  spawn)
    brief="$2" state="$3" prompt_file="$4"
    id="session_$(date +%s)_$$_${RANDOM}"
    dir="$sessions/$id"
    mkdir -p "$dir"
    cp -- "$brief" "$dir/brief.md"
    { cat -- "$prompt_file"; echo; } >> "$dir/prompts"
    start_work "$dir" "$state"
    echo "$id"
    ;;
  resume)
    dir=$(session_dir "$2")
    [ -d "$dir" ] || { echo "file_agent: no such session: $2" >&2; exit 1; }
    { cat -- "$4"; echo; } >> "$dir/prompts"
    start_work "$dir" "$3"
    echo "resumed $2"
    ;;
  check_status)
    dir=$(session_dir "${2:-}")
    [ -f "$dir/status" ] || { echo "file_agent: no such session: $2" >&2; exit 1; }
    cat "$dir/status"
    ;;
  *)
    echo "usage: file_agent.sh spawn|resume|check_status ..." >&2
    exit 2
    ;;
esac
