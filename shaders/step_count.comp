#version 450
// step_count advances an optimizer's step counter unless the step was
// skipped for an inf, after the update kernel has read it.
layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer Found { float found[]; };
layout(set = 0, binding = 1) buffer Steps { uint steps[]; };

void main() {
    if (found[0] == 0.0) steps[0] += 1u;
}
