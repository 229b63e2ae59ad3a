// Re-decides each finding's context with the callers of every translation
// unit of the run. Within one unit the checks decide with the callers they can
// see; a helper defined in one file and called from the training loop of
// another has none there. Joining every unit's call graph (TuResult::calls),
// a helper called from a loop anywhere is hot, and a printing helper that
// main() calls once after training is one-off, whichever file holds it.
// A run that holds main() and in which no unit names a CUDA device
// (TuResult::namesCuda) is a CPU program: its findings are low, whichever unit
// holds main(). Library files linted without main() are one too when the
// project's other sources (ProjectScan.h) show a main() and no CUDA.
// A unit that parsed with errors adds the calls its parse lost, read from its
// text; a loop that does not train, in a function called once, is an
// evaluation pass when any unit of the run trains.
#pragma once

#include "ProjectScan.h"
#include "TranslationUnit.h"

#include <vector>

namespace nosync::lint {

// Changes the level, message and context note of the findings whose context
// the whole project decides differently (a finding whose rule's LowSeverity
// option is `silent` is dropped when it becomes low severity), and drops the
// findings on a parameter's tensor that every call of the run places where
// it does not sync. Returns how many findings changed.
unsigned applyProjectContext(std::vector<TuResult>& results, const ProjectSources& sources);

}  // namespace nosync::lint
