# The two commands of the README:
#   make demo   install missing build dependencies, build, plan the default graph
#   make test   install missing dependencies, build with ASan+UBSan, run every test
# Other targets: build (release), bench, install, clean.

BUILD_DEPS = build-essential cmake pkg-config libjansson-dev libprotobuf-c-dev protobuf-c-compiler
TEST_DEPS  = python3 python3-onnx python3-torch python3-torchvision libtorch-dev python3-scipy valgrind clang libclang-rt-14-dev chromium
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps build demo test bench install clean

all: build

# Installs only what is missing (dpkg -s), so a ready machine does nothing.
deps:
	@missing=""; for p in $(BUILD_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

test-deps: deps
	@missing=""; for p in $(TEST_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; fi

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build -j $(JOBS)

demo: build
	./build/bufplan demo

test: test-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DBP_SANITIZE=address,undefined -DBP_FAULT_INJECTION=ON -DBP_BUILD_BENCH=OFF >/dev/null
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS)

# bench/run.sh installs the pool benchmark's peers (jemalloc, mimalloc,
# tcmalloc) when missing, as test-deps does
bench: build
	bench/run.sh all --quick

install: build
	cmake --install build

clean:
	rm -rf build build-asan build-tsan
