/*
 * figures.h - what the commands that write tables into a folder share
 * (`tensile bench paper`, `tensile frontier`): making the output folder,
 * and running a figure script of bench/ (matplotlib, Python) on it. The
 * library stays C: a missing python3 or matplotlib skips the figures with
 * a line saying how to get them.
 *
 * Example usage:
 *
 *   if (fig_make_folder("frontier", "--out", dir) != 0) return 1;
 *   ... write DIR/frontier.csv ...
 *   if (fig_run("frontier", "frontier_plot.py", dir) < 0) return 1;
 */
#ifndef TSL_TOOLS_FIGURES_H
#define TSL_TOOLS_FIGURES_H

/* Makes folder `dir` (given with option `opt`) if it is missing; its
 * parent must exist. Returns 0, or -1 with "tensile CMD: OPT: ..." on
 * stderr (a file that is not a folder, a folder that cannot be made). */
int fig_make_folder(const char *cmd, const char *opt, const char *dir);

/* Runs `python3 SCRIPT DIR`, SCRIPT the file `name` of bench/ (under
 * $TSL_SOURCE_DIR when set, else the source tree this program was built
 * from), its output and errors to ours, after a line "tensile CMD:
 * figures: python3 SCRIPT DIR" on stderr. Returns 0 when it ran and
 * succeeded; 1 when the figures were skipped (the script not found, or no
 * python3 with matplotlib: a line on stderr says so and how to get them);
 * -1 when the script failed (said on stderr). */
int fig_run(const char *cmd, const char *name, const char *dir);
#endif
