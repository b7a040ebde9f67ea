"""Print the medications due today from a state_list("medications/") JSON on stdin."""

import json
import sys

meds = json.load(sys.stdin)
for key, med in sorted(meds.items()):
    schedule = str(med.get("schedule", "")).lower()
    if "daily" in schedule or "every day" in schedule:
        print(f"{key.removeprefix('medications/')}: {med.get('dose', '?')} ({schedule})")
