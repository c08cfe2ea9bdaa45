# The program whose core gives fuzz_model its allocation-table seed
# (make fuzz-seeds: make_model_seed -a): ObjectSpace.trace_object_allocations
# records objects made in methods whose names are over 200 bytes, and a
# path and a line for each; then it parks and writes $CORESTACK_ORACLE,
# as tests/fuzz/take-core.sh waits for.
require "objspace"

class AllocSeed
  LONG = [("allocated_in_a_method_of_a_long_name_" * 7).to_sym,
          ("x" * 250).to_sym]
  LONG.each do |name|
    # an Array and a String made in this frame: their site's method is it
    define_method(name) { [[ARGV.size, name.size], "made in #{name.size}"] }
  end
end

KEEP = []
ObjectSpace.trace_object_allocations do
  AllocSeed::LONG.each { |name| KEEP.concat(AllocSeed.new.public_send(name)) }
  KEEP << Object.new
end
File.write(ENV.fetch("CORESTACK_ORACLE"), "{}")
sleep
