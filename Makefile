# Lantern — build, test and run.
#   make          build ./run (a link to build/run)
#   make run      install what building and running need, build, generate text with the default model
#   make test     install what its tests need, build, run the unit tests and the checks that prove
#                 the engine (minutes); last line "N passed, N failed, N skipped"
#   make test-all the same plus the long checks: fuzzing, sanitizers, ARM under qemu, the clang
#                 build, the whole book run and in Chromium, llama.cpp parity (CI runs this)
#   make unit     install doctest, build, the doctest cases alone (making the test models first
#                 if they are missing)
#   make test-arm64  the same engine built for 64-bit ARM, tested under emulation (qemu)
#   make bench    speed of the tokenizer and of the forward pass on the 0.5B-shaped model
#   make web      the engine as WebAssembly and a page that runs ./run's commands (build/web/)

CXX      ?= g++
BUILD    := build
.DEFAULT_GOAL := all

# --- Output -----------------------------------------------------------------
# One short line a file ("CXX net.cpp") instead of the full compiler command,
# as the Linux kernel's build prints; `make V=1` prints the full commands,
# `make -s` nothing.
ifeq ($(V),1)
Q   :=
say := @true
else ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
Q   := @
say := @true
else
Q   := @
say := @echo
endif

# --- Flags ------------------------------------------------------------------
# ARCH picks the instruction set. On x86-64 the AVX2 and AVX-512 kernel files
# are always built (their functions name their own targets) and chosen at run
# time by cpuid; on ARM, cpu/kernels_fast.cpp compiles NEON code when the compiler
# targets it and its portable scalar twin otherwise.
#   x86-64:     -march=native, this CPU's own extensions (AVX2, AVX-512 ...);
#   ARM Linux:  -mcpu=native (NEON always; dotprod and fp16 where the core has them);
#   macOS/ARM:  the compiler's default (Apple M1 and later have all three).
# A cross build names its target: make ARCH=-march=armv8.2-a+dotprod+fp16.
TARGET := $(shell $(CXX) -dumpmachine 2>/dev/null)
ifneq ($(findstring x86_64,$(TARGET))$(findstring i686,$(TARGET)),)
ARCH ?= -march=native
else ifneq ($(findstring aarch64,$(TARGET)),)
ARCH ?= -mcpu=native
else
ARCH ?=
endif

# Homebrew (macOS) puts headers and libraries under one prefix, and libomp
# under opt/libomp because Apple's clang ships without OpenMP. On Linux
# BREW_PREFIX is empty; set it to try the macOS layout with another prefix.
BREW_PREFIX ?= $(shell brew --prefix 2>/dev/null)
ifneq ($(BREW_PREFIX),)
LIB_FLAGS     := -I$(BREW_PREFIX)/include
LDLIBS        += -L$(BREW_PREFIX)/lib
OPENMP_CFLAGS ?= -Xpreprocessor -fopenmp -I$(BREW_PREFIX)/opt/libomp/include
OPENMP_LIBS   ?= -L$(BREW_PREFIX)/opt/libomp/lib -lomp
# Homebrew's cpp-httplib is the header alone; Debian's is a compiled library.
HTTPLIB_LIBS  ?= $(if $(wildcard $(BREW_PREFIX)/lib/libcpp-httplib*),-lcpp-httplib)
endif
OPENMP_CFLAGS ?= -fopenmp
OPENMP_LIBS   ?= -fopenmp
HTTPLIB_LIBS  ?= -lcpp-httplib

# OpenMP is used when the compiler has it (GCC does; clang needs libomp).
# Without it (or with `make OPENMP=0`) compat/omp.h stands in: every loop runs
# on one thread and computes the same bits, since no result depends on the
# thread count (book/12-performance.md).
ifeq ($(origin OPENMP),undefined)
OPENMP := $(shell printf '\043include <omp.h>\nint main() { return omp_get_max_threads() > 0 ? 0 : 1; }\n' | \
            $(CXX) -x c++ $(LIB_FLAGS) $(OPENMP_CFLAGS) - -o /dev/null $(OPENMP_LIBS) 2>/dev/null && echo 1 || echo 0)
endif
ifeq ($(OPENMP),1)
THREAD_FLAGS := $(OPENMP_CFLAGS)
LDLIBS       += $(OPENMP_LIBS)
else
THREAD_FLAGS := -DLANTERN_NO_OPENMP -Icompat -Wno-unknown-pragmas
endif

# What a user sets in CXXFLAGS (make CXXFLAGS=-O3, or in the environment)
# adds to the flags Lantern needs; it replaces only the default -O2 -g.
# -ffp-contract=off: the compiler may not fuse a * b + c into one
# multiply-add, which rounds once where the code says twice. GCC fuses by
# default wherever the CPU has the instruction (x86 with -march=native, every
# ARM64) and WebAssembly has none, so the same line would give different bits
# on different machines. Where the engine wants a fused multiply-add (the
# fast kernels), it says so: std::fma or an intrinsic (book/18-browser.md).
CXXFLAGS ?= -O2 -g
override CXXFLAGS := -std=c++17 -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -I. $(ARCH) $(THREAD_FLAGS) $(LIB_FLAGS) $(CXXFLAGS)
LDLIBS   += -lutf8proc -lpcre2-8 $(HTTPLIB_LIBS) -ledit -lpthread
# Each object depends on the headers it includes: the compiler writes the
# list (-MMD) into build/x.d next to build/x.o, and make reads them back.
DEPFLAGS := -MMD -MP

# The engine's sources: the top level is the first reading (the loop, the
# forward pass, the plain kernels, loading, tokenizer, sampler, logging, the
# report, the command line); each folder holds what a later chapter adds:
# cpu/ the fast kernels (x86/ and arm/ their instruction sets), gguf/ the
# file format and the block formats, cuda/ the GPU, serve/ the server. One
# glob per folder. main.cpp only hands the command line to cli.cpp: the unit
# tests and the exercises link the engine objects with their own main().
SRC_DIRS    := . cpu cpu/x86 cpu/arm gguf serve cuda lens
ENGINE_SRCS := $(filter-out main.cpp,$(patsubst ./%,%,$(wildcard $(SRC_DIRS:%=%/*.cpp))))
ENGINE_OBJS := $(ENGINE_SRCS:%.cpp=$(BUILD)/%.o)
TEST_SRCS   := $(wildcard tests/*.cpp)
TEST_OBJS   := $(TEST_SRCS:tests/%.cpp=$(BUILD)/tests/%.o)
-include $(ENGINE_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BUILD)/main.d $(BUILD)/gen_model.d
# An object whose .d list is missing (built by an older Makefile, or never)
# is rebuilt, so no object can silently miss a header change.
$(BUILD)/%.d: ;

# make cuda: the same ./run plus the GPU backend (--device cuda), built in
# build/cuda so CPU and CUDA objects never mix; `make` switches ./run back.
# Needs the CUDA toolkit; the default build never calls nvcc. The CUDA
# runtime is linked statically, so ./run needs only the NVIDIA driver.
CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
.PHONY: cuda
cuda:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/cuda LANTERN_CUDA=1 $(BUILD)/cuda/run $(BUILD)/cuda/unit_tests
	@ln -sf $(BUILD)/cuda/run run
ifdef LANTERN_CUDA
override CXXFLAGS += -DLANTERN_CUDA -I$(CUDA_HOME)/include
ENGINE_OBJS += $(BUILD)/cuda/kernels_cuda.o
LDLIBS      += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt
$(BUILD)/cuda/kernels_cuda.o: cuda/kernels_cuda.cu cuda/kernels_cuda.h | $(BUILD)
	@mkdir -p $(@D)
	$(say) NVCC $<
	$(Q)$(NVCC) -std=c++17 -O2 -I. $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -c -o $@ $<
endif

.PHONY: all deps deps-run deps-unit deps-test models run test test-all unit bench clean
all: $(BUILD)/run $(BUILD)/gen_model
	@ln -sf $(BUILD)/run run

$(BUILD)/run: $(ENGINE_OBJS) $(BUILD)/main.o
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.cpp $(BUILD)/%.d | $(BUILD)
	@mkdir -p $(@D)
	$(say) CXX $<
	$(Q)$(CXX) $(CXXFLAGS) $(DEPFLAGS) -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.cpp $(BUILD)/tests/%.d | $(BUILD)
	@mkdir -p $(BUILD)/tests
	$(say) CXX $<
	$(Q)$(CXX) $(CXXFLAGS) $(DEPFLAGS) -I. -c -o $@ $<

# serve_page.html, the page `./run serve` answers GET / with, goes into the
# binary as one C++ raw string literal that serve/server.cpp includes.
$(BUILD)/serve_page.inc: serve/serve_page.html | $(BUILD)
	$(say) GEN $@
	$(Q){ printf 'R"PAGE('; cat $<; printf ')PAGE"\n'; } >$@
$(BUILD)/serve/server.o: $(BUILD)/serve_page.inc
$(BUILD)/serve/server.o: override CXXFLAGS += -I$(BUILD)

$(BUILD)/unit_tests: $(ENGINE_OBJS) $(TEST_OBJS)
	$(say) LINK $@
	$(Q)$(CXX) $(CXXFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/gen_model: tools/gen_model.cpp $(BUILD)/common.o | $(BUILD)
	$(say) CXX $<
	$(Q)$(CXX) $(CXXFLAGS) $(DEPFLAGS) -I. -o $@ tools/gen_model.cpp $(BUILD)/common.o

# One matrix product's speed at the 0.5B shapes (not part of `all`; book/12-performance.md).
$(BUILD)/matmul_speed: tools/matmul_speed.cpp $(ENGINE_OBJS) | $(BUILD)
	$(CXX) $(CXXFLAGS) -I. -o $@ tools/matmul_speed.cpp $(ENGINE_OBJS) $(LDLIBS)

$(BUILD):
	@mkdir -p $(BUILD)

# Installs missing apt packages and npm modules, fetches the Qwen tokenizer:
# deps-run what building and running need, deps-unit the unit tests' doctest
# too, deps-test what `make test` needs too, deps everything
# (tools/install_deps.sh says what each layer holds).
deps-run:
	@bash tools/install_deps.sh run
deps-unit:
	@bash tools/install_deps.sh unit
deps-test:
	@bash tools/install_deps.sh test
deps:
	@bash tools/install_deps.sh all

# The generated test models (random weights, real tokenizer). On a fresh
# clone this also fetches the tokenizer (tools/install_deps.sh).
models: $(BUILD)/gen_model
	@bash tools/make_models.sh

# The demo: the default model (trained/kjv) answers a prompt through the
# chat template, sampling with the settings of its generation_config.json,
# as every run does by default (greedy decoding makes this small model loop:
# see chapter 15).
DEMO_PROMPT ?= Tell me about the flood
# The setup targets build on every core (the compiler is most of a fresh
# machine's first minutes); `make` alone builds as make -jN says.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
run: deps-run
	@$(MAKE) --no-print-directory -j$(JOBS) all
	./run "$(DEMO_PROMPT)" -n 64

# The test tiers (tests/run_all.sh): `make test` before every commit (a check
# whose script says "# tier: all" waits for `make test-all`), `make unit` the
# doctest cases alone.
test: deps-test
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/unit_tests
	@$(MAKE) --no-print-directory models
	@bash tests/run_all.sh quick

test-all: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/unit_tests
	@$(MAKE) --no-print-directory models
	@bash tests/run_all.sh all

unit: deps-unit
	@$(MAKE) --no-print-directory -j$(JOBS) all $(BUILD)/unit_tests
	@$(MAKE) --no-print-directory models
	@bash tests/run_all.sh unit

# 64-bit ARM on this machine (tests/check_arm64.sh, also part of `make test-all`):
# cross-compiled into build/arm64 and run under qemu-aarch64; the unit tests,
# the fast-vs-plain check, and logits and a generation compared with x86.
.PHONY: test-arm64
test-arm64: deps
	@bash tests/check_arm64.sh

# Speed (book/12-performance.md): the forward pass on the 0.5B-shaped model
# (generated once: ~1 GB of random bf16 weights) in four weight types,
# decode after long contexts beside llama.cpp, then the tokenizer and the
# server. `./run bench ... --save` keeps a run as a record (book/records/).
bench: all
	@[ -f models/qwen2.5-0.5b/model.safetensors ] || $(BUILD)/gen_model --preset qwen2.5-0.5b --out models/qwen2.5-0.5b
	./run bench models/qwen2.5-0.5b --quant bf16,q8_0,f16,f32
	./run bench models/qwen2.5-0.5b --quant bf16 --kv-type f16 --depth 0,1024,4096 --decode 32
	@[ -f models/qwen3-0.6b/model.safetensors ] || $(BUILD)/gen_model --preset qwen3-0.6b --out models/qwen3-0.6b
	./run bench models/qwen3-0.6b --quant bf16
	@if [ -f tools/bench_tokenizer.sh ]; then bash tools/bench_tokenizer.sh; fi
	python3 tools/bench_serve.py models/qwen2.5-0.5b --threads 2 --clients 8 --tokens 64

clean:
	rm -rf $(BUILD) run

# The browser (book/18-browser.md): `make web` builds the engine with
# Emscripten into build/web/ (web/build.sh): index.html, the WebAssembly
# module, the default model; serve the folder with python3 -m http.server.
.PHONY: web
web:
	@bash tools/install_deps.sh web
	@bash web/build.sh

# The book: `make book` writes the index of terms (tools/book_index.py), then
# renders book/*.md and their Chinese twins book/zh/*.md
# to HTML in build/book/ and build/book/zh/ (tools/book_render.py, pandoc);
# `make book-check` runs its commands and compares its outputs (part of
# `make test-all`, as tests/check_book_commands.sh; `make test` runs its
# static checks, tests/check_book.sh).
# STUDENT=1 renders the student edition into $(BUILD)/book-student: no answer
# key (chapters/answers.md) in its pages, links or search, and no quoted
# code of a function an exercise asks for.
.PHONY: book book-check
book:
	@/usr/bin/python3 tools/book_index.py
	@/usr/bin/python3 tools/book_render.py $(BUILD)/book$(if $(STUDENT),-student --student)

book-check: all models $(BUILD)/unit_tests
	@/usr/bin/python3 tools/book_check.py

# The book's figures (book/img/fig-*.svg), drawn by tools/figures.py from the
# engine's own numbers, in English and in Chinese (book/img/zh/, the labels from
# book/terms.tsv and tools/figures_zh.tsv); tests/check_figures.sh checks the
# committed ones are current.
.PHONY: figures
figures: all
	@/usr/bin/python3 tools/figures.py --lang en,zh

# The trace report in a real browser (headless Chromium): its script must run
# without a JavaScript error; leaves a screenshot in build/report.png. Also
# part of `make test`, as tests/check_report.sh.
.PHONY: report-check
report-check: all models
	@bash tests/check_report.sh

# Exercises (chapters/README.md): `make exercise EX=rmsnorm` builds the
# student's chapters/rmsnorm/stub.cpp into the engine in place of the real
# function and runs its checker; SOLUTION=1 puts the engine's own function
# in the stub's place (it must pass); JSON=1 prints the result as JSON
# (tools/grade_class.sh grades a class with it). Without EX: the list. It ends
# on the checker's verdict, with status 0 after NOT YET (a make error line
# after it would read as a broken build); JSON=1 keeps the checker's status.
.PHONY: exercise
exercise: all
	@$(MAKE) --no-print-directory models
	@CXX="$(CXX)" CXXFLAGS="$(CXXFLAGS)" LDLIBS="$(LDLIBS)" OBJS="$(ENGINE_OBJS)" \
	    bash chapters/build_exercise.sh "$(EX)" $(if $(SOLUTION),--solution) $(if $(JSON),--json,--verdict)

# The student pack (chapters/make_student_pack.py): the tree with every exercise's
# function replaced by its stub, no answer key, no tests; in $(BUILD)/student-pack.
.PHONY: student-pack
student-pack: all
	@/usr/bin/python3 chapters/make_student_pack.py $(BUILD)/student-pack

# The default model (book/15-weights.md): corpus -> tokenizer -> training -> export
# into trained/kjv, with TRAINING.md and the loss curve. MINUTES is the training
# budget in CPU minutes of one thread (`make train MINUTES=5` for a quick run).
MINUTES ?= 50
.PHONY: train
train: deps
	bash tools/make_corpus.sh $(BUILD)/kjv/corpus.txt
	node tools/train_tokenizer.js train $(BUILD)/kjv/corpus.txt $(BUILD)/kjv 4096
	nice /usr/bin/python3 tools/train.py --corpus $(BUILD)/kjv/corpus.txt \
	    --tokenizer $(BUILD)/kjv/tokenizer.json --work $(BUILD)/kjv --out trained/kjv --minutes $(MINUTES)

# Fuzzing (book/B-untrusted-input.md, "Model files and requests are untrusted
# input"): libFuzzer targets in tests/fuzz/, one per reader of untrusted
# bytes, built with clang, AddressSanitizer and UndefinedBehaviorSanitizer in
# build/fuzz. `make fuzz` runs each for FUZZ_SECONDS from its committed seed
# corpus (tests/fuzz/corpus/NAME); a failing input is saved in
# build/fuzz/crashes/. tests/check_fuzz.sh (part of `make test-all`) runs each
# briefly.
FUZZ_SECONDS ?= 180
FUZZ_CXX     ?= clang++
FUZZ_FLAGS   := -O1 -g -std=c++17 -I. $(ARCH) $(THREAD_FLAGS) $(LIB_FLAGS) -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_ENGINE  := common json_read arch model gguf/gguf gguf/gguf_load gguf/quants logging tokenizer tokenizer_load serve/server_api
# The matrix kernels read no input bytes; they come from the normal build
# (clang 14 lacks some of their cpu-feature names).
FUZZ_KERNELS := $(patsubst %.cpp,$(BUILD)/%.o,kernels.cpp $(wildcard cpu/kernel_sets.cpp cpu/kernels_fast.cpp cpu/attention_fast.cpp cpu/x86/*.cpp cpu/arm/*.cpp) cpu/quants_fast.cpp cpu/quants_packed.cpp)
FUZZ_NAMES   := $(patsubst tests/fuzz/%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp))
-include $(FUZZ_ENGINE:%=$(BUILD)/fuzz/obj/%.d) $(FUZZ_NAMES:%=$(BUILD)/fuzz/%.d)
.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_NAMES:%=$(BUILD)/fuzz/%)
fuzz: fuzz-build
	@bash tests/fuzz/run.sh $(FUZZ_SECONDS) $(BUILD)/fuzz

$(BUILD)/fuzz/obj/%.o: %.cpp
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_FLAGS) $(DEPFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.cpp $(FUZZ_ENGINE:%=$(BUILD)/fuzz/obj/%.o) $(FUZZ_KERNELS)
	$(FUZZ_CXX) $(FUZZ_FLAGS) $(DEPFLAGS) -fsanitize=fuzzer -I. -o $@ $< $(FUZZ_ENGINE:%=$(BUILD)/fuzz/obj/%.o) $(FUZZ_KERNELS) $(LDLIBS)

# make sanitize: the unit tests and the command-line error checks once more,
# built with AddressSanitizer and UndefinedBehaviorSanitizer in build/sanitize
# (any report fails the run). ./run points at the sanitized binary while the
# checks run and back at build/run after. SANITIZE=thread builds with
# ThreadSanitizer in build/tsan instead and runs the server's checks.
SANITIZE ?= address,undefined
SAN_BUILD := $(if $(filter thread,$(SANITIZE)),$(BUILD)/tsan,$(BUILD)/sanitize)
.PHONY: sanitize
sanitize: all models
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) \
	    CXXFLAGS="-O1 -g -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    $(SAN_BUILD)/run $(SAN_BUILD)/unit_tests
	@bash tests/sanitize.sh $(SAN_BUILD) $(SANITIZE)
