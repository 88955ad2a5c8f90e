import cProfile, pstats, io, time
_pr = cProfile.Profile()
_t0 = time.perf_counter()
_pr.enable()
exec(compile(open("app.py").read(), "app.py", "exec"))
_pr.disable()
_s = io.StringIO()
pstats.Stats(_pr, stream=_s).sort_stats("cumulative").print_stats(60)
open("/tmp/app_profile.txt", "w").write(f"total {time.perf_counter()-_t0:.2f}s\n" + _s.getvalue())
