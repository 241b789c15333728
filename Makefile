# The two commands of the README: `make demo` and `make test`. Both install
# what is missing first. Everything else is CMake.
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan

.PHONY: all deps build demo test test-fast asan tsan bench install clean
all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)/tensile

# The whole suite: the release build, then the ASan + UBSan build, then the
# runtime's tests under ThreadSanitizer.
test: build
	@bash scripts/pydeps.sh || echo "note: jax or torch not installable; their reference tests will report SKIPPED"
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory tsan

asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTSL_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 TSL_TEST_QUICK=1 ctest --output-on-failure -j $(JOBS)

# The runtime's tests (ctest label "runtime": the threaded code) under
# ThreadSanitizer; any report fails the test (halt_on_error).
tsan: deps
	@cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTSL_TSAN=ON >/dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target runtime_tests
	@cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" TSL_TEST_QUICK=1 \
		ctest -L runtime --output-on-failure -j $(JOBS)

bench: build
	@bash bench/run.sh $(BUILD)

install: build
	@cmake --install $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
